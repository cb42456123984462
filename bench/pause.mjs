// Pause benchmarks through the official e2b SDK against a real in-process Burrow: a filesystem pause and its cold
// resume beside a memory pause and its resume in the same run, and the memory N sandboxes hold running, memory-paused
// and filesystem-paused (target ≈ 0 for the last).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { median, percentile, report, timeMs } from "./lib/stats.mjs";
import { boundedErrors, freeSubnet } from "./lib/host.mjs";

const RUNS = Number(process.env.BENCH_PAUSE_RUNS ?? 20);
/** Sandboxes for the memory figures (default 1,000; the server admits 2,000 live). */
const SANDBOXES = Number(process.env.BENCH_PAUSED_SANDBOXES ?? 1000);
const CONCURRENCY = 16;
/** Creation stops early below this much MemAvailable: the machine is shared. */
const MEM_FLOOR_BYTES = 4 * 2 ** 30;
/** How long the kernel gets to free what ended (network namespaces are torn down in the background). */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 15_000);

function memAvailableBytes() {
  const line = readFileSync("/proc/meminfo", "utf8").split("\n").find((l) => l.startsWith("MemAvailable:"));
  return Number(line.split(/\s+/)[1]) * 1024;
}

/**
 * Anonymous memory (what processes hold, not page cache) charged to the instance's sandbox cgroups: exact where
 * MemAvailable is shared with everything else on the machine. cgroup v1 memory hierarchy, or v2.
 */
function sandboxAnonBytes(instance) {
  // The instance's parent cgroup sits below the cgroup this process runs in, wherever that is.
  for (const [root, key] of [
    ["/sys/fs/cgroup/memory", "total_rss"],
    ["/sys/fs/cgroup", "anon"],
  ]) {
    try {
      const dir = execFileSync("find", [root, "-maxdepth", "5", "-type", "d", "-name", `burrow-${instance}`], { encoding: "utf8" }).split("\n")[0];
      const line = dir && readFileSync(`${dir}/memory.stat`, "utf8").split("\n").find((l) => l.startsWith(`${key} `));
      if (line) return Number(line.split(" ")[1]);
    } catch {
      // Not this layout.
    }
  }
  return Number.NaN;
}

/** MemAvailable once the kernel has settled (freed pages are counted back after a moment). */
async function settledMemAvailable() {
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  return memAvailableBytes();
}

export async function runPauseBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-pause-");
  const instance = `p${randomBytes(2).toString("hex")}`;
  const burrow = await startBurrow({ stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 0 } });
  const { opts } = burrow;
  try {
    process.stdout.write("\n== pause: memory vs filesystem (official e2b SDK → Burrow) ==\n");
    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 3_600_000 });
    await sandbox.files.write("/home/user/kept.txt", "kept");
    const memPause = [];
    const memResume = [];
    const fsPause = [];
    const fsResume = [];
    const firstCommand = [];
    for (let i = 0; i < RUNS; i++) {
      memPause.push(await timeMs(() => sandbox.pause()));
      memResume.push(await timeMs(() => Sandbox.connect(sandbox.sandboxId, opts)));
      fsPause.push(await timeMs(() => sandbox.pause({ keepMemory: false })));
      let resumed;
      fsResume.push(await timeMs(async () => (resumed = await Sandbox.connect(sandbox.sandboxId, opts))));
      // The resume answers once envd does: the first command right after is the rest of what a client waits for.
      firstCommand.push(await timeMs(() => resumed.commands.run("true")));
    }
    report("filesystem pause, p50", median(fsPause), "ms", median(memPause), "memory pause p50");
    report("filesystem pause, p95", percentile(fsPause, 95), "ms", percentile(memPause, 95), "memory pause p95");
    report("cold resume (connect after fs pause), p50", median(fsResume), "ms", median(memResume), "memory resume p50");
    report("cold resume, p95", percentile(fsResume, 95), "ms", percentile(memResume, 95), "memory resume p95");
    report("first command after cold resume, p50", median(firstCommand), "ms");
    await sandbox.kill();

    // Memory held: MemAvailable before any sandbox, with N running, N memory-paused, N filesystem-paused.
    const base = await settledMemAvailable();
    const sandboxes = [];
    const createErrors = await boundedErrors(Array.from({ length: SANDBOXES }), CONCURRENCY, async () => {
      if (memAvailableBytes() < MEM_FLOOR_BYTES) return;
      sandboxes.push(await Sandbox.create("base", { ...opts, timeoutMs: 3_600_000 }));
    });
    if (sandboxes.length < SANDBOXES) process.stdout.write(`  stopped at ${sandboxes.length} sandboxes: MemAvailable under the floor\n`);
    const running = await settledMemAvailable();
    const runningAnon = sandboxAnonBytes(instance);
    // pause() answers false (409) for a sandbox that is paused already: count it as a failure, not a pause.
    const paused = (s, pauseOpts) =>
      Sandbox.pause(s.sandboxId, { ...opts, ...pauseOpts }).then((done) => {
        if (!done) throw new Error(`${s.sandboxId} was not paused`);
      });
    const memErrors = await boundedErrors(sandboxes, CONCURRENCY, (s) => paused(s, {}));
    const memPaused = await settledMemAvailable();
    const memPausedAnon = sandboxAnonBytes(instance);
    // The API pauses running sandboxes only: back to running, then paused without memory.
    const fsErrors = await boundedErrors(sandboxes, CONCURRENCY, async (s) => {
      await Sandbox.connect(s.sandboxId, opts);
      await paused(s, { keepMemory: false });
    });
    const fsPaused = await settledMemAvailable();
    const fsPausedAnon = sandboxAnonBytes(instance);
    const n = sandboxes.length;
    const perSandbox = (avail) => (base - avail) / Math.max(1, n) / (1 << 20);
    report(`memory held by ${n} running sandboxes, per sandbox`, perSandbox(running), "MB");
    report(`…memory-paused, per sandbox`, perSandbox(memPaused), "MB", perSandbox(running), "running");
    report(`…filesystem-paused, per sandbox`, perSandbox(fsPaused), "MB", perSandbox(running), "running", "≈ 0");
    report(`…filesystem-paused, all ${n} together`, (base - fsPaused) / (1 << 20), "MB");
    // MemAvailable moves with everything else the machine runs; the cgroups' own count does not.
    const mb = (bytes) => bytes / (1 << 20);
    report(`process memory in sandbox cgroups, ${n} running`, mb(runningAnon), "MB");
    report(`…${n} memory-paused`, mb(memPausedAnon), "MB", mb(runningAnon), "running");
    report(`…${n} filesystem-paused`, mb(fsPausedAnon), "MB", mb(runningAnon), "running", "≈ 0");
    report("errors (create, memory pause, fs pause)", createErrors.length + memErrors.length + fsErrors.length, "errors", undefined, undefined, "0");
    for (const [what, errors] of [["create", createErrors], ["memory pause", memErrors], ["fs pause", fsErrors]]) {
      if (errors.length > 0) process.stdout.write(`  first ${what} error: ${errors[0]?.message}\n`);
    }
    await boundedErrors(sandboxes, CONCURRENCY, (s) => Sandbox.kill(s.sandboxId, opts));
  } finally {
    await stopBurrow(burrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}
