// The shipped `browser` template: the base template plus Debian's Chromium, running headless with its DevTools
// protocol on port 9222 from the moment the sandbox is handed out, so playwright-core's
// `chromium.connectOverCDP()` and puppeteer-core's `connect()` drive it from outside through the gateway
// (`https://9222-<id>.<domain>` or the E2b-Sandbox-Id / E2b-Sandbox-Port headers).
import type { BuildSpec } from "./builder/build-spec.js";
import { CDP_PORT, CHROMIUM_CDP_COMMAND, CHROMIUM_FILES, CHROMIUM_PACKAGES } from "./chromium-files.js";
import { aptInstallStep, writeFilesStep, type ShippedTemplate } from "./shipped-template.js";

export const BROWSER_TEMPLATE = "browser";

function browserSpec(): BuildSpec {
  return {
    fromTemplate: "base",
    force: false,
    steps: [
      aptInstallStep(CHROMIUM_PACKAGES),
      writeFilesStep(CHROMIUM_FILES),
      { type: "USER", args: ["user"], force: false },
      { type: "WORKDIR", args: ["/home/user"], force: false },
      { type: "ENV", args: [BROWSER.versionEnv, BROWSER.version], force: false },
    ],
    // The profile lives in the sandbox's own disk; headless Chromium has no use for a GPU process.
    startCmd: `exec ${CHROMIUM_CDP_COMMAND} --headless --disable-gpu about:blank`,
    readyCmd: `curl -sf -o /dev/null http://127.0.0.1:${CDP_PORT}/json/version`,
  };
}

export const BROWSER: ShippedTemplate = {
  name: BROWSER_TEMPLATE,
  aliases: [],
  versionEnv: "BURROW_BROWSER_TEMPLATE",
  version: "1",
  limits: { cpuCount: 2, memoryMB: 2048 },
  spec: browserSpec,
};
