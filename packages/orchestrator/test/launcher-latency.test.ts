// Launch latency of burrow-sandbox, reported (not asserted: the machines are shared and timing
// assertions would flake). Each sample is a full launch until launchSandbox resolves; the node
// samples run the runtime's node until a script it runs has written a marker.
import { stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildRuntimeDir, runtimeCommand } from "../src/rootfs/index.js";
import { ensureTestRootfs } from "./helpers/base-rootfs.js";
import { mountsUnder, SandboxFixture, waitFor } from "./helpers/sandbox-fixture.js";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] ?? NaN) : ((s[s.length / 2 - 1] ?? 0) + (s[s.length / 2] ?? 0)) / 2;
};
const fmt = (xs: number[]) =>
  `median ${median(xs).toFixed(1)} ms, min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)} (n=${xs.length})`;

describe("launch latency", () => {
  let fx: SandboxFixture;

  beforeAll(async () => {
    fx = new SandboxFixture(await ensureTestRootfs());
    const dir = await fx.dir();
    const bundle = join(dir, "marker.mjs");
    await writeFile(bundle, 'import { writeFileSync } from "node:fs"; writeFileSync("/tmp/marker", "up"); setInterval(() => {}, 1e9);\n');
    fx.runtime = join(dir, "runtime");
    const nodePty = dirname(createRequire(import.meta.url).resolve("node-pty/package.json"));
    await buildRuntimeDir({ outDir: fx.runtime, files: { bundle, nativeModules: [{ name: "node-pty", dir: nodePty }] } });
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("starts a sandbox (20 launches of a sleeping command)", async () => {
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      const sb = await fx.launch({ command: ["/bin/sleep", "infinity"] });
      samples.push(performance.now() - t0);
      await fx.kill(sb);
      expect(await mountsUnder(sb.dirs.root)).toEqual([]);
    }
    console.log(`burrow-sandbox launch: ${fmt(samples)}`);
    expect(samples).toHaveLength(20);
  });

  it("starts node from the runtime until its marker appears (10 launches)", async () => {
    const samples: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      const sb = await fx.launch({ command: runtimeCommand() });
      await waitFor("marker", () => stat(join(sb.dirs.upper, "tmp/marker")).then(() => true, () => undefined));
      samples.push(performance.now() - t0);
      await fx.kill(sb);
    }
    console.log(`node runtime until marker: ${fmt(samples)}`);
    expect(samples).toHaveLength(10);
  });
});
