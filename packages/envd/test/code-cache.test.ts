// The build leaves V8's code cache for envd's bundle beside it, made by this node with no flags, and V8 accepts it:
// every sandbox's envd then starts without compiling the bundle again (cached-entry.ts). A build that stops making
// the cache, or makes one V8 refuses (flags, another node), fails here rather than silently starting slower.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { wrap } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Script } from "node:vm";
import { beforeAll, expect, test } from "vitest";
import { BUNDLE, buildEnvd } from "./helpers/envd-fixture.js";

beforeAll(() => buildEnvd());

test("the bundle's code cache is there and V8 accepts it", () => {
  const main = join(BUNDLE, "..", "envd-main.cjs");
  const script = new Script(wrap(readFileSync(main, "utf8")), { filename: main, cachedData: readFileSync(join(BUNDLE, "..", "envd-main.cache")) });
  expect(script.cachedDataRejected).toBe(false);
});

// The build sends envd a sandbox's first requests (a command, file writes and reads) before it takes the cache, so the
// functions on their path are in it too (code-cache-warm-up.mjs). A cache taken from an envd that only started holds
// start-up alone, and is much smaller.
test("the build's cache was taken after a sandbox's first requests, not at start-up alone", async () => {
  const dir = mkdtempSync(join(tmpdir(), "envd-cache-"));
  try {
    const startupOnly = join(dir, "startup.cache");
    const child = spawn(process.execPath, [BUNDLE], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ENVD_PORT: "0", ENVD_HOST: "127.0.0.1", BURROW_ENVD_WRITE_CODE_CACHE: startupOnly },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    let log = "";
    child.stderr.setEncoding("utf8");
    await new Promise<void>((resolve, reject) => {
      child.once("exit", () => reject(new Error(`envd exited: ${log}`)));
      child.stderr.on("data", (chunk: string) => {
        log += chunk;
        if (log.includes('"listening"')) resolve();
      });
    });
    // As long as the build waits for the routes to load before its requests.
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.kill("SIGUSR2");
    await exited;
    const built = statSync(join(BUNDLE, "..", "envd-main.cache")).size;
    expect(built).toBeGreaterThan(statSync(startupOnly).size * 1.2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
