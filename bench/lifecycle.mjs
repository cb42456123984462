// E2B's lifecycle benchmarks through the official e2b SDK against a real in-process Burrow server: the latency of
// the first request routed to a memory-paused sandbox with autoResume (the gateway resumes it, then serves it)
// beside the same request to the same sandbox running, and beside an explicit Sandbox.connect followed by it.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { median, percentile, report, timeMs } from "./lib/stats.mjs";
import { freeSubnet } from "./lib/host.mjs";

const RUNS = Number(process.env.BENCH_LIFECYCLE_RUNS ?? 30);
const FILE = "/home/user/wake.txt";

export async function runLifecycleBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-lifecycle-");
  const instance = `c${randomBytes(2).toString("hex")}`;
  const burrow = await startBurrow({ stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 0 } });
  const { opts } = burrow;
  try {
    process.stdout.write("\n== lifecycle: auto-resume (official e2b SDK → Burrow) ==\n");
    // These machines are shared: every run states how busy it was.
    process.stdout.write(`load average at start: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}\n`);
    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 3_600_000, lifecycle: { onTimeout: "pause", autoResume: true } });
    await sandbox.files.write(FILE, "awake");
    // Warm the SDK's connections and the sandbox's envd before measuring.
    for (let i = 0; i < 5; i++) await sandbox.files.read(FILE);

    const running = [];
    const autoResumed = [];
    const connected = [];
    for (let i = 0; i < RUNS; i++) {
      running.push(await timeMs(() => sandbox.files.read(FILE)));
      // An explicit pause is a memory pause like the timeout's, and autoResume applies to it alike.
      await sandbox.pause();
      autoResumed.push(await timeMs(() => sandbox.files.read(FILE)));
      await sandbox.pause();
      connected.push(await timeMs(async () => (await Sandbox.connect(sandbox.sandboxId, opts)).files.read(FILE)));
    }
    report("files.read, memory-paused → auto-resume, p50", median(autoResumed), "ms", median(running), "files.read running");
    report("files.read, memory-paused → auto-resume, p95", percentile(autoResumed, 95), "ms", percentile(running, 95), "files.read running p95");
    report("connect + files.read, memory-paused, p50", median(connected), "ms", median(autoResumed), "auto-resumed files.read");
    await sandbox.kill();
  } finally {
    await stopBurrow(burrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runLifecycleBenchmarks();
