// Load through the gateway: many idle sandboxes, then one `commands.run('echo ok')` on each of them at once, with
// the official e2b SDK against a real Burrow server in its own process (`burrow up`, default settings). The
// 1,000-sandbox figures are printed beside the same commands against 100 sandboxes in the same run.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { median, percentile, report } from "./lib/stats.mjs";
import { bounded, freePort, freeSubnet } from "./lib/host.mjs";

const SANDBOXES = Number(process.env.BENCH_LOAD_SANDBOXES ?? 1000);
const BASELINE_SANDBOXES = Number(process.env.BENCH_LOAD_BASELINE ?? 100);
/** Creates in flight at once: a 2-core machine starts sandboxes one or two at a time anyway. */
const CREATE_CONCURRENCY = Number(process.env.BENCH_LOAD_CREATE_CONCURRENCY ?? 24);
const IDLE_GAP_MS = 10_000;
const CLI = join(import.meta.dirname, "..", "packages", "cli", "dist", "main.js");
/** Generous: on a loaded 2-core machine a thousand commands queue for minutes, and what is measured is errors. */
const CALL_TIMEOUT_MS = 15 * 60_000;

function memAvailableBytes() {
  const line = readFileSync("/proc/meminfo", "utf8").split("\n").find((l) => l.startsWith("MemAvailable:"));
  return Number(line.split(/\s+/)[1]) * 1024;
}

async function startBurrow() {
  const instance = { stateDir: mkdtempSync("/var/tmp/burrow-bench-load-"), instance: `l${randomBytes(2).toString("hex")}`, subnet: freeSubnet() };
  const port = await freePort();
  const args = ["--state-dir", instance.stateDir, "--instance", instance.instance, "--subnet", instance.subnet];
  const child = spawn(process.execPath, [CLI, "up", ...args, "--port", String(port), "--host", "127.0.0.1", "--pool-size", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, BURROW_LOG_LEVEL: "warn", BURROW_PUBLIC_REGISTRIES: "false", NODE_OPTIONS: "--trace-warnings" },
  });
  let output = "";
  child.stdout.on("data", (c) => (output += c));
  child.stderr.on("data", (c) => (output += c));
  await new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (output.includes("Burrow is listening on")) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    child.once("exit", (code) => {
      clearInterval(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  child.removeAllListeners("exit");
  const url = `http://127.0.0.1:${port}`;
  const apiKey = readFileSync(join(instance.stateDir, "api-key"), "utf8").trim();
  return {
    opts: { apiKey, apiUrl: url, sandboxUrl: url },
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      spawnSync(process.execPath, [CLI, "down", ...args], { encoding: "utf8" });
      rmSync(instance.stateDir, { recursive: true, force: true });
    },
  };
}

async function createSandboxes(count, opts) {
  const created = [];
  const errors = [];
  const started = Date.now();
  await bounded(Array.from({ length: count }), CREATE_CONCURRENCY, async () => {
    try {
      created.push(await Sandbox.create("base", { ...opts, timeoutMs: 3_600_000, requestTimeoutMs: CALL_TIMEOUT_MS }));
    } catch (err) {
      errors.push(err);
    }
  });
  return { created, errors, seconds: (Date.now() - started) / 1000 };
}

/** One `echo ok` on every sandbox at once: per-call latencies (successes) and errors counted by cause. */
async function runAtOnce(sandboxes) {
  const latencies = [];
  const errors = new Map();
  const started = Date.now();
  await Promise.all(
    sandboxes.map(async (sandbox) => {
      const t0 = performance.now();
      try {
        const result = await sandbox.commands.run("echo ok", { requestTimeoutMs: CALL_TIMEOUT_MS, timeoutMs: CALL_TIMEOUT_MS });
        if (result.stdout !== "ok\n") throw new Error(`unexpected output ${JSON.stringify(result.stdout)}`);
        latencies.push(performance.now() - t0);
      } catch (err) {
        const key = `${err?.name}: ${String(err?.message).slice(0, 120)}`;
        errors.set(key, (errors.get(key) ?? 0) + 1);
      }
    }),
  );
  return { latencies, errors, errorCount: [...errors.values()].reduce((a, b) => a + b, 0), seconds: (Date.now() - started) / 1000 };
}

function printErrors(label, errors) {
  for (const [key, count] of errors) process.stdout.write(`  ${label}: ${count} × ${key}\n`);
}

export async function runLoadBenchmarks() {
  process.stdout.write(`\n== load: ${SANDBOXES} sandboxes, one command each at once (official e2b SDK → burrow up) ==\n`);
  const loadavg = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  process.stdout.write(`machine load average at start: ${loadavg}\n`);
  const burrow = await startBurrow();
  const sandboxes = [];
  try {
    const memBefore = memAvailableBytes();
    const first = await createSandboxes(Math.min(BASELINE_SANDBOXES, SANDBOXES), burrow.opts);
    sandboxes.push(...first.created);
    const baseline = await runAtOnce(sandboxes);

    const rest = await createSandboxes(SANDBOXES - sandboxes.length, burrow.opts);
    sandboxes.push(...rest.created);
    const createErrors = [...first.errors, ...rest.errors];
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const memAfter = memAvailableBytes();
    report(`create ${SANDBOXES} idle sandboxes, ${CREATE_CONCURRENCY} at a time: errors`, createErrors.length, "errors", undefined, undefined, "0");
    for (const err of createErrors.slice(0, 3)) process.stdout.write(`  create error: ${err?.name}: ${err?.message}\n`);
    report(`  …time for all ${SANDBOXES}`, first.seconds + rest.seconds, "s");
    report(`memory per idle sandbox (${sandboxes.length} running)`, (memBefore - memAfter) / Math.max(1, sandboxes.length) / 2 ** 20, "MB", undefined, undefined, "≤ 20 MB");

    const atOnce = await runAtOnce(sandboxes);
    await new Promise((resolve) => setTimeout(resolve, IDLE_GAP_MS));
    const afterGap = await runAtOnce(sandboxes);

    const n = sandboxes.length;
    const b = baseline.latencies.length ? baseline : undefined;
    report(`${n} simultaneous commands.run('echo ok'): errors`, atOnce.errorCount, "errors", baseline.errorCount, `${first.created.length} at once`, "0");
    printErrors(`${n} at once`, atOnce.errors);
    printErrors(`${first.created.length} at once`, baseline.errors);
    report(`  …p50`, median(atOnce.latencies), "ms", b && median(b.latencies), `${first.created.length} at once p50`);
    report(`  …p99`, percentile(atOnce.latencies, 99), "ms", b && percentile(b.latencies, 99), `${first.created.length} at once p99`);
    report(`  …all done after`, atOnce.seconds, "s", baseline.seconds, `${first.created.length} at once`);
    report(`the same after a ${IDLE_GAP_MS / 1000} s idle gap: errors`, afterGap.errorCount, "errors", undefined, undefined, "0");
    printErrors("after the gap", afterGap.errors);
    report(`  …p99`, percentile(afterGap.latencies, 99), "ms", b && percentile(b.latencies, 99), `${first.created.length} at once p99`);
    report(`  …all done after`, afterGap.seconds, "s", baseline.seconds, `${first.created.length} at once`);
    const warnings = burrow.output().match(/MaxListenersExceededWarning/g)?.length ?? 0;
    const upstream = burrow.output().match(/sandbox connection failed/g)?.length ?? 0;
    process.stdout.write(`server log: ${warnings} MaxListenersExceededWarning, ${upstream} "sandbox connection failed" lines\n`);
  } finally {
    await bounded(sandboxes, 32, (sandbox) => sandbox.kill().catch(() => undefined));
    await burrow.stop();
  }
}
