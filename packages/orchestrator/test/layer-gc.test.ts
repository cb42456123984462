// Layer garbage collection against the real filesystem: a layer deeper than PATH_MAX is collected, and a layer
// that cannot be removed neither stops the collection nor stays under its id; the next collection retries it.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveOrchestratorConfig } from "../src/config.js";
import type { Logger } from "../src/logger.js";
import type { SandboxHost } from "../src/sandbox-host.js";
import { TemplateBuilder } from "../src/templates/builder/template-builder.js";
import { TemplateStore } from "../src/templates/template-store.js";
import { buildDeepTreeOnHost, DEEP_LEVELS, deepTreeDepthOnHost } from "../../../test/helpers/deep-tree.js";

let stateDir: string;
let layersDir: string;
let builder: TemplateBuilder;
const warnings: string[] = [];

const logger: Logger = {
  info() {},
  debug() {},
  error: (_obj, msg) => void warnings.push(msg ?? ""),
  warn: (_obj, msg) => void warnings.push(msg ?? ""),
};

beforeEach(async () => {
  stateDir = await mkdtemp("/var/tmp/burrow-layer-gc-");
  layersDir = join(stateDir, "layers");
  const store = new TemplateStore(join(stateDir, "templates"), layersDir);
  await store.load();
  await store.save({
    templateId: "kept",
    aliases: ["kept"],
    layers: ["kept-layer"],
    defaults: { cpuCount: 1, memoryMB: 256, diskMB: 512, pids: 128 },
    createdAt: new Date().toISOString(),
  });
  mkdirSync(join(layersDir, "kept-layer"));
  // GC never reaches the sandbox host; the builder only needs it for builds.
  builder = new TemplateBuilder({ store, host: {} as SandboxHost, config: resolveOrchestratorConfig({ stateDir }), logger });
  warnings.length = 0;
});

afterEach(async () => {
  await builder.close();
  // Mounts the test made, wherever a rename took them (deepest first).
  const mountPoints = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((mountPoint) => mountPoint.startsWith(`${stateDir}/`))
    .sort((a, b) => b.length - a.length);
  for (const mountPoint of mountPoints) execFileSync("umount", [mountPoint]);
  execFileSync("rm", ["-rf", "--one-file-system", "--", stateDir]);
});

describe("layer garbage collection", () => {
  it("collects a layer deeper than PATH_MAX", async () => {
    buildDeepTreeOnHost(join(layersDir, "deep-layer", "home"));
    expect(deepTreeDepthOnHost(join(layersDir, "deep-layer", "home"))).toBe(DEEP_LEVELS);

    const { removedLayers } = await builder.collectGarbage();

    expect(removedLayers).toEqual(["deep-layer"]);
    expect(readdirSync(layersDir)).toEqual(["kept-layer"]);
  });

  it("goes on past a layer it cannot remove, takes that one out of the layer ids, and retries it next time", async () => {
    // A mount inside a layer: removal refuses to cross it.
    const mountPoint = join(layersDir, "stuck-layer", "mnt");
    mkdirSync(mountPoint, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "burrow-test", mountPoint]);
    writeFileSync(join(mountPoint, "precious"), "x");
    buildDeepTreeOnHost(join(layersDir, "zz-deep-layer"));

    const first = await builder.collectGarbage();

    expect(first.removedLayers.sort()).toEqual(["stuck-layer", "zz-deep-layer"]);
    const left = readdirSync(layersDir).sort();
    expect(left).toEqual([expect.stringMatching(/^\.tmp-gc-stuck-layer-[0-9a-f]+$/), "kept-layer"]);
    expect(warnings).toContain("could not remove a layer; the next collection retries");
    const doomed = join(layersDir, left[0] ?? "");
    expect(readFileSync(join(doomed, "mnt", "precious"), "utf8")).toBe("x");

    execFileSync("umount", [join(doomed, "mnt")]);
    await builder.collectGarbage();

    expect(existsSync(doomed)).toBe(false);
    expect(readdirSync(layersDir)).toEqual(["kept-layer"]);
  });
});
