// Template benchmarks against a real in-process Burrow server through the official SDK: a cached rebuild of a
// 5-step template (target ≤ 1 s), a cold build of code-interpreter, and create latency from a custom template
// beside create from base in the same run (target: within 10%).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { median, report, sample, timeMs } from "./lib/stats.mjs";

const CREATE_RUNS = Number(process.env.BENCH_TEMPLATE_CREATE_RUNS ?? 10);

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
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance, subnet: "10.223.0.0/16", pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const server = await startServer({ host: "127.0.0.1", port: 0, stateDir, domain: "localhost" }, { orchestrator });
  const url = `http://127.0.0.1:${server.port}`;
  const conn = { apiKey: readFileSync(join(stateDir, "api-key"), "utf8").trim(), apiUrl: url, sandboxUrl: url };
  try {
    process.stdout.write("\n== templates (official e2b SDK → Burrow) ==\n");
    const cold = await timeMs(() => Template.build(fiveSteps(context), "bench-five", conn));
    const cached = await sample(5, () => Template.build(fiveSteps(context), "bench-five", conn));
    report("template: cached rebuild, 5 steps", median(cached), "ms", cold, "first build", "≤ 1000 ms");

    const ci = await timeMs(() => Template.build(Template().fromTemplate("base").aptInstall(
      ["python3-ipykernel", "python3-numpy", "python3-pandas", "python3-matplotlib"], { noInstallRecommends: true },
    ), "bench-code-interpreter", conn));
    report("template: cold build of code-interpreter", ci / 1000, "s");

    const createKill = (ref) => async () => {
      const sandbox = await Sandbox.create(ref, conn);
      await sandbox.kill();
    };
    // Interleaved so machine noise hits both equally.
    const fromBase = [];
    const fromCustom = [];
    for (let i = 0; i < CREATE_RUNS; i++) {
      fromBase.push(await timeMs(createKill("base")));
      fromCustom.push(await timeMs(createKill("bench-five")));
    }
    report("create from custom template (5 steps)", median(fromCustom), "ms", median(fromBase), "create from base", "within 10%");
  } finally {
    await server.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(context, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runTemplateBenchmarks();
