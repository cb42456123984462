// Template benchmarks against a real in-process Burrow server through the official SDK, each figure beside a
// baseline measured in the same run:
// - cached rebuild of a 5-step template (target ≤ 1 s), beside its first (cold) build;
// - cold build of the shipped code-interpreter template (its first Sandbox.create), beside the same apt-get
//   install run directly in a sandbox from base;
// - create latency from a custom template beside create from base (target: within 10%).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { median, report, sample, timeMs } from "./lib/stats.mjs";

const CREATE_RUNS = Number(process.env.BENCH_TEMPLATE_CREATE_RUNS ?? 20);
const REBUILD_RUNS = Number(process.env.BENCH_TEMPLATE_REBUILD_RUNS ?? 10);
const SKIP_CODE_INTERPRETER = process.env.BENCH_SKIP_CODE_INTERPRETER === "1";
/** As in packages/orchestrator/src/templates/code-interpreter.ts. */
const CODE_INTERPRETER_PACKAGES = ["python3-ipykernel", "python3-numpy", "python3-pandas", "python3-matplotlib"];

function fiveSteps(context) {
  return Template({ fileContextPath: context })
    .fromTemplate("base")
    .runCmd("echo one > /tmp/one", { user: "root" })
    .setEnvs({ BENCH: "1" })
    .copy("file.txt", "/home/user/file.txt")
    .setWorkdir("/home/user")
    .runCmd("echo two > two.txt");
}

export async function runTemplateBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-tpl-");
  const context = mkdtempSync("/var/tmp/burrow-bench-ctx-");
  writeFileSync(join(context, "file.txt"), "bench\n");
  const instance = `t${randomBytes(2).toString("hex")}`;
  // 10.250-254/16: away from the test instances (10.200-249) and the sandbox benchmark (10.222).
  const subnet = `10.${250 + (randomBytes(1)[0] % 5)}.0.0/16`;
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance, subnet, pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const server = await startServer({ host: "127.0.0.1", port: 0, stateDir }, {
    orchestrator,
    templates: orchestrator.templateBuilder,
    logger: pino({ level: "warn" }),
  });
  const url = `http://127.0.0.1:${server.port}`;
  const conn = { apiKey: readFileSync(join(stateDir, "api-key"), "utf8").trim(), apiUrl: url, sandboxUrl: url };
  const quiet = { ...conn, onBuildLogs: () => undefined };
  try {
    process.stdout.write("\n== templates (official e2b SDK → Burrow) ==\n");
    const cold = await timeMs(() => Template.build(fiveSteps(context), "bench-five", quiet));
    let lastLogs = [];
    const cached = await sample(REBUILD_RUNS, async () => {
      lastLogs = [];
      await Template.build(fiveSteps(context), "bench-five", { ...conn, onBuildLogs: (e) => lastLogs.push(e.message) });
    });
    const counters = lastLogs.find((l) => /ready \(\d+ steps run, \d+ cached\)/.test(l)) ?? "";
    report(`template: cached rebuild, 5 steps (median of ${REBUILD_RUNS})`, median(cached), "ms", cold, "first build", "≤ 1000 ms");
    process.stdout.write(`  last rebuild: ${counters.replace(/^.*ready /, "")}; max ${Math.max(...cached).toFixed(0)} ms\n`);

    const createKill = (ref) => async () => {
      const sandbox = await Sandbox.create(ref, conn);
      await sandbox.kill();
    };
    // Interleaved so machine noise hits both equally; one of each first to warm caches.
    await createKill("base")();
    await createKill("bench-five")();
    const fromBase = [];
    const fromCustom = [];
    for (let i = 0; i < CREATE_RUNS; i++) {
      fromBase.push(await timeMs(createKill("base")));
      fromCustom.push(await timeMs(createKill("bench-five")));
    }
    report(`create+kill from custom template (median of ${CREATE_RUNS})`, median(fromCustom), "ms", median(fromBase), "create+kill from base", "within 10%");

    if (!SKIP_CODE_INTERPRETER) {
      // The shipped definition, built on demand by the first create that names it.
      const ci = await timeMs(async () => {
        const sandbox = await Sandbox.create("code-interpreter", { ...conn, requestTimeoutMs: 0 });
        await sandbox.kill();
      });
      // Baseline: the same packages installed by apt-get in a plain sandbox (no build, no layer commit).
      const sandbox = await Sandbox.create("base", conn);
      let apt;
      try {
        apt = await timeMs(() =>
          sandbox.commands.run(
            "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends " +
              CODE_INTERPRETER_PACKAGES.join(" "),
            { user: "root", timeoutMs: 0 },
          ),
        );
      } finally {
        await sandbox.kill();
      }
      report("template: cold code-interpreter (first create)", ci / 1000, "s", apt / 1000, "same apt-get in a base sandbox");
    }
  } finally {
    await server.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(context, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runTemplateBenchmarks();
