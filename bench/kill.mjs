// Kill throughput through the official e2b SDK against a real in-process Burrow server: N running sandboxes killed
// all at once (Sandbox.kill for each, concurrently), then N more killed one after another; per-kill latency (p50,
// p95) and kills per second, beside create throughput of the same sandboxes in the same run. The orchestrator's
// debug lines "sandbox torn down" give each teardown's steps (killAll, networkRelease, cgroupDestroy, removeDir),
// whose medians are printed so that a slow kill shows where its time went.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Sandbox } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { median, percentile, report } from "./lib/stats.mjs";
import { bounded, freeSubnet } from "./lib/host.mjs";

const COUNTS = (process.env.BENCH_KILL_COUNTS ?? "50,200").split(",").map(Number);
/** Creates in flight at once: a 2-core machine starts sandboxes one or two at a time anyway. */
const CREATE_CONCURRENCY = Number(process.env.BENCH_KILL_CREATE_CONCURRENCY ?? 8);
const CALL_TIMEOUT_MS = 15 * 60_000;

async function createMany(count, opts) {
  const started = performance.now();
  const created = [];
  let errors = 0;
  await bounded(Array.from({ length: count }), CREATE_CONCURRENCY, async () => {
    try {
      created.push(await Sandbox.create("base", { ...opts, timeoutMs: 3_600_000, requestTimeoutMs: CALL_TIMEOUT_MS }));
    } catch (err) {
      // A loaded machine may miss envd's readiness deadline; the kills are measured on the sandboxes that started.
      if (errors++ < 3) process.stdout.write(`  create error: ${err?.name}: ${err?.message}\n`);
    }
  });
  if (errors > 0) process.stdout.write(`  ${errors} of ${count} creates failed\n`);
  return { ids: created.map((s) => s.sandboxId), seconds: (performance.now() - started) / 1000 };
}

async function killOne(id, opts) {
  const t0 = performance.now();
  const killed = await Sandbox.kill(id, { ...opts, requestTimeoutMs: CALL_TIMEOUT_MS });
  if (!killed) throw new Error(`sandbox ${id} was not found to kill`);
  return performance.now() - t0;
}

async function killAtOnce(ids, opts) {
  const started = performance.now();
  const latencies = await Promise.all(ids.map((id) => killOne(id, opts)));
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

async function killOneByOne(ids, opts) {
  const started = performance.now();
  const latencies = [];
  for (const id of ids) latencies.push(await killOne(id, opts));
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/** Median of each teardown step over the teardowns logged since `from`. */
function stepMedians(teardowns, from) {
  const steps = new Map();
  for (const t of teardowns.slice(from)) {
    for (const [name, ms] of Object.entries(t)) steps.set(name, [...(steps.get(name) ?? []), ms]);
  }
  return [...steps].map(([name, values]) => `${name} ${median(values).toFixed(1)} (p95 ${percentile(values, 95).toFixed(1)})`).join(", ");
}

export async function runKillBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-kill-");
  const instance = `k${randomBytes(2).toString("hex")}`;
  const teardowns = [];
  // The orchestrator's debug lines, kept only for the teardown timings.
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) {
        if (line.includes('"teardownMs"')) teardowns.push(JSON.parse(line).teardownMs);
      }
      done();
    },
  });
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    logger: pino({ level: "debug" }, sink),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const server = await startServer({ host: "127.0.0.1", port: 0, stateDir }, { orchestrator, logger: pino({ level: "warn" }) });
  const url = `http://127.0.0.1:${server.port}`;
  const opts = { apiKey: readFileSync(join(stateDir, "api-key"), "utf8").trim(), apiUrl: url, sandboxUrl: url };
  const leftover = [];
  try {
    process.stdout.write("\n== kill throughput (official e2b SDK → Burrow) ==\n");
    // These machines are shared: every run states how busy it was.
    process.stdout.write(`load average at start: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}\n`);
    for (const n of COUNTS) {
      const first = await createMany(n, opts);
      leftover.push(...first.ids);
      let mark = teardowns.length;
      const atOnce = await killAtOnce(first.ids, opts);
      leftover.length = 0;
      const atOnceSteps = stepMedians(teardowns, mark);
      const second = await createMany(n, opts);
      leftover.push(...second.ids);
      mark = teardowns.length;
      const oneByOne = await killOneByOne(second.ids, opts);
      leftover.length = 0;
      const oneByOneSteps = stepMedians(teardowns, mark);
      const createRate = (first.ids.length + second.ids.length) / (first.seconds + second.seconds);
      report(`kill ${first.ids.length} at once: kills per second`, first.ids.length / atOnce.seconds, "/s", createRate, `creates per second (${CREATE_CONCURRENCY} at a time)`);
      report(`  …all ${first.ids.length} killed after`, atOnce.seconds, "s", first.seconds, `creating them`);
      report(`  …per kill p50`, median(atOnce.latencies), "ms", median(oneByOne.latencies), "one by one p50");
      report(`  …per kill p95`, percentile(atOnce.latencies, 95), "ms", percentile(oneByOne.latencies, 95), "one by one p95");
      process.stdout.write(`  teardown steps at once, ms median: ${atOnceSteps}\n`);
      report(`kill ${second.ids.length} one by one: kills per second`, second.ids.length / oneByOne.seconds, "/s", createRate, "creates per second");
      report(`  …per kill p50`, median(oneByOne.latencies), "ms");
      report(`  …per kill p95`, percentile(oneByOne.latencies, 95), "ms");
      process.stdout.write(`  teardown steps one by one, ms median: ${oneByOneSteps}\n`);
    }
  } finally {
    await Promise.allSettled(leftover.map((id) => Sandbox.kill(id, opts)));
    await server.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runKillBenchmarks();
