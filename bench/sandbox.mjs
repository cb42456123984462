// Sandbox benchmarks through the official e2b SDK against a real in-process Burrow server, each figure
// printed beside a baseline measured in the same run.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, readFileSync as readSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { median, percentile, report, sample, timeMs } from "./lib/stats.mjs";
import { freeSubnet } from "./lib/host.mjs";

const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 20);
const WARM_RUNS = Number(process.env.BENCH_WARM_RUNS ?? 20);
const RTT_RUNS = Number(process.env.BENCH_RTT_RUNS ?? 200);
const IDLE_SANDBOXES = Number(process.env.BENCH_IDLE_SANDBOXES ?? 100);
const POOL_SIZE = 4;
const SHELLS = 4;

function spawnOnce(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** The 1, 5 and 15 minute load averages: these machines are shared, so every run states how busy it was. */
function loadAverage() {
  return readSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

function memAvailableBytes() {
  const line = readSync("/proc/meminfo", "utf8").split("\n").find((l) => l.startsWith("MemAvailable:"));
  return Number(line.split(/\s+/)[1]) * 1024;
}

export async function runSandboxBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-");
  const instance = `b${randomBytes(2).toString("hex")}`;
  // One subnet for both starts: the warm-pool start reuses the cold start's state directory.
  const subnet = freeSubnet();
  const burrow = await startBurrow({ stateDir, instance, subnet, pool: { template: "base", size: 0 } });
  const { opts } = burrow;
  /** Cold creates (no pool, no prepared sandbox): the baseline of the prepared-sandbox figure further down. */
  const cold = [];
  try {
    process.stdout.write("\n== sandboxes (official e2b SDK → Burrow) ==\n");
    process.stdout.write(`load average at start: ${loadAverage()} (${cpus().length} CPUs)\n`);
    // Baseline: a bare launch of /bin/true in fresh namespaces.
    const bareNs = await sample(COLD_RUNS, () =>
      spawnOnce("unshare", ["--user", "--map-root-user", "--pid", "--fork", "--mount", "--net", "--uts", "--ipc", "--cgroup", "/bin/true"]),
    );
    const bwrap = await sample(COLD_RUNS, () =>
      spawnOnce("bwrap", ["--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "/bin/true"]),
    );

    for (let i = 0; i < COLD_RUNS; i++) {
      let sandbox;
      cold.push(await timeMs(async () => (sandbox = await Sandbox.create("base", opts))));
      await sandbox.kill();
    }
    report("create, cold (no pool), p50", median(cold), "ms", median(bareNs), "unshare /bin/true", "≤ 50 ms");
    report("create, cold (no pool), p95", percentile(cold, 95), "ms", median(bwrap), "bwrap /bin/true");

    const firstCommand = [];
    for (let i = 0; i < Math.min(COLD_RUNS, 10); i++) {
      let sandbox;
      firstCommand.push(
        await timeMs(async () => {
          sandbox = await Sandbox.create("base", opts);
          await sandbox.commands.run("true");
        }),
      );
      await sandbox.kill();
    }
    report("time to first command (create + run), p50", median(firstCommand), "ms", median(bareNs), "unshare /bin/true");

    const sandbox = await Sandbox.create("base", opts);
    const localSpawn = await sample(RTT_RUNS, () => spawnOnce("/bin/true", []));
    const rtt = await sample(RTT_RUNS, () => sandbox.commands.run("true"));
    report("commands.run('true') round trip, p50", median(rtt), "ms", median(localSpawn), "local child_process spawn", "≤ 10 ms");
    report("commands.run('true') round trip, p95", percentile(rtt, 95), "ms", percentile(localSpawn, 95), "local spawn p95");

    const scratch = mkdtempSync("/var/tmp/burrow-bench-fs-");
    for (const [label, size] of [["1 MB", 1 << 20], ["100 MB", 100 << 20]]) {
      const data = randomBytes(size);
      const runs = size > 10 << 20 ? 3 : 10;
      const remote = await sample(runs, async () => {
        await sandbox.files.write("/home/user/blob.bin", data);
        const back = await sandbox.files.read("/home/user/blob.bin", { format: "bytes" });
        if (back.length !== size) throw new Error("short read");
      });
      const local = await sample(runs, () => {
        writeFileSync(join(scratch, "blob.bin"), data);
        readFileSync(join(scratch, "blob.bin"));
      });
      const mbps = (ms) => (2 * size) / (1 << 20) / (ms / 1000);
      report(`file write+read ${label}, throughput`, mbps(median(remote)), "MB/s", mbps(median(local)), "local filesystem");
    }
    rmSync(scratch, { recursive: true, force: true });
    await sandbox.kill();

    // Marginal memory per idle sandbox: MemAvailable before and after IDLE_SANDBOXES idle sandboxes.
    const before = memAvailableBytes();
    const idle = await Promise.allSettled(Array.from({ length: IDLE_SANDBOXES }, () => Sandbox.create("base", opts)));
    const created = idle.filter((r) => r.status === "fulfilled").map((r) => r.value);
    const errors = idle.filter((r) => r.status === "rejected");
    await new Promise((r) => setTimeout(r, 3000));
    const after = memAvailableBytes();
    const nodeIdle = await measureIdleNodeRss();
    report(
      `${IDLE_SANDBOXES} concurrent creates: errors`,
      errors.length,
      "errors",
      undefined,
      undefined,
      "0",
    );
    if (errors.length > 0) process.stdout.write(`  first error: ${errors[0].reason?.message}\n`);
    report(
      `memory per idle sandbox (${created.length} running)`,
      (before - after) / Math.max(1, created.length) / (1 << 20),
      "MB",
      nodeIdle / (1 << 20),
      "one idle node http server RSS",
      "≤ 20 MB",
    );
    await Promise.allSettled(created.map((s) => s.kill()));
  } finally {
    await stopBurrow(burrow);
  }

  // Warm pool: a fresh server with a pool; each create claims a ready sandbox.
  const warmBurrow = await startBurrow({ stateDir, instance, subnet, pool: { template: "base", size: POOL_SIZE, shells: 0 } });
  try {
    await warmBurrow.orchestrator.warmPoolReady();
    const warm = [];
    for (let i = 0; i < WARM_RUNS; i++) {
      await warmBurrow.orchestrator.warmPoolReady();
      let sandbox;
      warm.push(await timeMs(async () => (sandbox = await Sandbox.create("base", warmBurrow.opts))));
      await sandbox.kill();
    }
    const bareNs = await sample(COLD_RUNS, () =>
      spawnOnce("unshare", ["--user", "--map-root-user", "--pid", "--fork", "--mount", "--net", "--uts", "--ipc", "--cgroup", "/bin/true"]),
    );
    report("create, warm pool, p50", median(warm), "ms", median(bareNs), "unshare /bin/true", "≤ 10 ms");
    report("create, warm pool, p95", percentile(warm, 95), "ms", percentile(bareNs, 95), "unshare /bin/true p95");
  } finally {
    await stopBurrow(warmBurrow);
  }

  // Prepared sandboxes: no pool of the template, SHELLS sandboxes running on a first root; a create takes one and
  // swaps the template's root in (launcher --swap-root). Beside it, cold launches in the same run.
  const shellBurrow = await startBurrow({ stateDir, instance, subnet, pool: { template: "base", size: 0, shells: SHELLS } });
  try {
    await shellBurrow.orchestrator.warmPoolReady();
    const fromShell = [];
    for (let i = 0; i < WARM_RUNS; i++) {
      await shellBurrow.orchestrator.warmPoolReady();
      let sandbox;
      fromShell.push(await timeMs(async () => (sandbox = await Sandbox.create("base", shellBurrow.opts))));
      await sandbox.kill();
    }
    report("create of a template without a pool, from a prepared sandbox, p50", median(fromShell), "ms", median(cold), "cold launch (above)", "≤ 50 ms");
    report("create of a template without a pool, from a prepared sandbox, p95", percentile(fromShell, 95), "ms", percentile(cold, 95), "cold launch p95");
    process.stdout.write(`load average at end: ${loadAverage()}\n`);
  } finally {
    await stopBurrow(shellBurrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** RSS of a bare idle node http server: what any node process costs, for scale. */
async function measureIdleNodeRss() {
  const child = spawn(process.execPath, ["-e", "require('http').createServer(()=>{}).listen(0,'127.0.0.1',()=>console.log('up'))"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  await new Promise((resolve) => child.stdout.once("data", resolve));
  await new Promise((r) => setTimeout(r, 300));
  const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
  child.kill("SIGKILL");
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
}

