// Code-interpreter benchmarks through the official @e2b/code-interpreter SDK against a real in-process Burrow
// server, each figure beside a baseline measured in the same run:
// - create + first runCode('1+1'), cold (no pool), beside a plain create of the base template;
// - create + first runCode('1+1') from the warm pool (a sandbox waiting with its kernels started; target ≤ 150 ms),
//   beside a create alone from the same pool;
// - steady runCode('x += 1') round trip p50 (target ≤ 15 ms), beside the same execute sent straight to a local
//   ipykernel over ZeroMQ (no HTTP, gateway or sandbox in between);
// - a matplotlib plot round trip (png + chart data), beside the same plot in the local kernel.
// The first create builds the code-interpreter-v1 template (minutes, measured by templates.mjs); it is not timed.
// The local baseline needs Debian's python3-ipykernel on this machine; without it those baselines are left out.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Sandbox } from "@e2b/code-interpreter";
import { Sandbox as BaseSandbox } from "e2b";
import { startLocalKernel } from "@burrow/code-interpreter";
import { codeInterpreterRuntimeFiles } from "@burrow/code-interpreter/runtime-files";
import { startBurrow as startBenchBurrow } from "./lib/burrow.mjs";
import { median, report, sample, timeMs } from "./lib/stats.mjs";

const COLD_RUNS = Number(process.env.BENCH_CI_COLD_RUNS ?? 5);
const POOLED_RUNS = Number(process.env.BENCH_CI_POOLED_RUNS ?? 10);
const RTT_RUNS = Number(process.env.BENCH_CI_RTT_RUNS ?? 200);
const PLOT_RUNS = Number(process.env.BENCH_CI_PLOT_RUNS ?? 20);

const PLOT = `
import matplotlib.pyplot as plt
import { freeSubnet } from "./lib/host.mjs";
plt.figure(figsize=(6, 4))
plt.plot([1, 2, 3, 4], [1, 4, 9, 16], label='squares')
plt.xlabel('x (m)')
plt.title('plot')
plt.show()
`;

async function localKernelBaselines() {
  let local;
  try {
    local = await startLocalKernel("python", process.cwd());
  } catch (error) {
    process.stderr.write(`[bench] no local ipykernel for the baseline (${error.message.split("\n")[0]})\n`);
    return undefined;
  }
  const run = async (code) => {
    for await (const event of local.kernel.execute(code)) {
      if (event.type === "error") throw new Error(`${event.name}: ${event.value}`);
    }
  };
  try {
    await run("x = 0");
    await run(PLOT);
    const rtt = await sample(RTT_RUNS, () => run("x += 1"));
    const plot = await sample(PLOT_RUNS, () => run(PLOT));
    return { rtt: median(rtt), plot: median(plot) };
  } finally {
    await local.close();
  }
}

/** 10.221/16: away from the test instances (10.200-249), the sandbox (10.222) and template (10.250-254) benchmarks. */
function startBurrow(stateDir, instance, pool) {
  return startBenchBurrow({ stateDir, instance, subnet: freeSubnet(), pool, programs: [codeInterpreterRuntimeFiles()] });
}

/**
 * From the pool: the same state directory, restarted with only the code interpreter's pool on (one sandbox waiting
 * with its kernels started). Each figure waits for the pool to be full again, so every create claims a sandbox.
 */
async function pooledBenchmarks(stateDir, instance) {
  const { orchestrator, server, opts } = await startBurrow(stateDir, instance, { template: "base", size: 0, sizes: { "code-interpreter-v1": 1 } });
  try {
    await (await Sandbox.create(opts)).kill(); // puts the template in use: its pool starts filling
    const createOnly = [];
    const createAndRun = [];
    for (let i = 0; i < POOLED_RUNS; i++) {
      let sandbox;
      await orchestrator.warmPoolReady();
      createOnly.push(await timeMs(async () => (sandbox = await Sandbox.create(opts))));
      await sandbox.kill();
      await orchestrator.warmPoolReady();
      createAndRun.push(
        await timeMs(async () => {
          sandbox = await Sandbox.create(opts);
          const execution = await sandbox.runCode("1+1");
          if (execution.text !== "2") throw new Error(`runCode('1+1') gave ${execution.text}`);
        }),
      );
      await sandbox.kill();
    }
    report("create + first runCode('1+1'), pooled, p50", median(createAndRun), "ms", median(createOnly), "create alone, pooled", "≤ 150 ms");
  } finally {
    await server.close();
    await orchestrator.shutdown();
  }
}

export async function runCodeInterpreterBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-ci-");
  const instance = `c${randomBytes(2).toString("hex")}`;
  const { orchestrator, server, opts } = await startBurrow(stateDir, instance, { template: "base", size: 0, sizes: {} });
  let stopped = false;
  try {
    process.stdout.write("\n== code interpreter (official @e2b/code-interpreter SDK → Burrow) ==\n");
    process.stderr.write("[bench] building the code-interpreter-v1 template (first use; minutes)\n");
    // The HTTP client gives up on an answer slower than 5 minutes (and a server may drop a silent connection);
    // the build goes on, so ask again.
    for (let attempt = 1; ; attempt++) {
      try {
        await (await Sandbox.create({ ...opts, requestTimeoutMs: 0 })).kill();
        break;
      } catch (error) {
        if (attempt >= 4 || !["UND_ERR_SOCKET", "UND_ERR_HEADERS_TIMEOUT"].includes(error?.cause?.code)) throw error;
      }
    }

    const baseCreate = [];
    for (let i = 0; i < COLD_RUNS; i++) {
      let sandbox;
      baseCreate.push(await timeMs(async () => (sandbox = await BaseSandbox.create("base", opts))));
      await sandbox.kill();
    }
    const cold = [];
    for (let i = 0; i < COLD_RUNS; i++) {
      let sandbox;
      cold.push(
        await timeMs(async () => {
          sandbox = await Sandbox.create(opts);
          const execution = await sandbox.runCode("1+1");
          if (execution.text !== "2") throw new Error(`runCode('1+1') gave ${execution.text}`);
        }),
      );
      await sandbox.kill();
    }
    report("create + first runCode('1+1'), cold, p50", median(cold), "ms", median(baseCreate), "create base");

    const local = await localKernelBaselines();
    const sandbox = await Sandbox.create(opts);
    try {
      await sandbox.runCode("x = 0");
      await sandbox.runCode(PLOT);
      const rtt = await sample(RTT_RUNS, async () => {
        const execution = await sandbox.runCode("x += 1");
        if (execution.error) throw new Error(execution.error.value);
      });
      report("runCode('x += 1') round trip, p50", median(rtt), "ms", local?.rtt, "local ipykernel over ZeroMQ", "≤ 15 ms");
      const plot = await sample(PLOT_RUNS, async () => {
        const execution = await sandbox.runCode(PLOT);
        if (!execution.results[0]?.png || !execution.results[0]?.chart) throw new Error("plot without png or chart");
      });
      report("plot round trip (png + chart data), p50", median(plot), "ms", local?.plot, "same plot, local ipykernel");
    } finally {
      await sandbox.kill();
    }
    await server.close();
    await orchestrator.shutdown();
    stopped = true;
    await pooledBenchmarks(stateDir, instance);
  } finally {
    if (!stopped) {
      await server.close();
      await orchestrator.shutdown();
    }
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runCodeInterpreterBenchmarks();
