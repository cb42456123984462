// Closing a directory watcher frees its native state exactly once, whichever comes last of libuv's close
// callback and the GC finalizer of its JS wrapper. Run in a child process under --expose-gc (a crash or a
// corrupted watcher shows as a failed exit, not as a dead test worker).
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, test } from "vitest";
import { BUNDLE, buildEnvd, tempDir } from "./helpers/envd-fixture.js";

const work = tempDir("envd-watch-gc-");
let script: string;

beforeAll(async () => {
  buildEnvd();
  script = join(work.path, "watcher-churn.mjs");
  await build({
    entryPoints: [join(import.meta.dirname, "fixtures", "watcher-churn.ts")],
    outfile: script,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["burrow-envd-native"],
    logLevel: "warning",
  });
  // the bundle loads the addon from ./node_modules, as envd.mjs does
  symlinkSync(join(BUNDLE, "..", "node_modules"), join(work.path, "node_modules"));
});
afterAll(() => work.remove());

test("10,000 DirWatchers opened and closed with forced GC: every later watcher works, no fd leaks, no crash", () => {
  const watched = join(work.path, "watched");
  mkdirSync(watched);
  const r = spawnSync(process.execPath, ["--expose-gc", script, watched, "10000", "100"], { encoding: "utf8", timeout: 120_000 });
  expect(r.stderr).toBe("");
  expect(r.signal).toBeNull();
  expect(r.status).toBe(0);
  expect(JSON.parse(r.stdout.trim())).toMatchObject({ closed: 10_000 });
});
