#!/usr/bin/env node
// `npm run bench`: every benchmark, each figure beside a baseline measured in the same run.
import { cpus, totalmem } from "node:os";
import { runSandboxBenchmarks } from "./sandbox.mjs";

process.stdout.write(
  `Burrow benchmarks — ${new Date().toISOString()} — ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ` +
    `${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}\n`,
);
const only = process.argv[2];
if (!only || only === "sandbox") await runSandboxBenchmarks();
if (!only || only === "bus") {
  process.stdout.write("\n== agent bus ==\n");
  const { runBusBenchmarks } = await import("./bus.mjs");
  await runBusBenchmarks();
}
if (!only || only === "templates") await (await import("./templates.mjs")).runTemplateBenchmarks();
if (!only || only === "code-interpreter") await (await import("./code-interpreter.mjs")).runCodeInterpreterBenchmarks();
if (!only || only === "mcp") await (await import("./mcp.mjs")).runMcpBenchmarks();
if (!only || only === "load") await (await import("./load.mjs")).runLoadBenchmarks();
if (!only || only === "pause") await (await import("./pause.mjs")).runPauseBenchmarks();
if (!only || only === "lifecycle") await (await import("./lifecycle.mjs")).runLifecycleBenchmarks();
if (!only || only === "checkpoints") await (await import("./checkpoints.mjs")).runCheckpointBenchmarks();
if (!only || only === "kill") await (await import("./kill.mjs")).runKillBenchmarks();
if (!only || only === "forks") await (await import("./forks.mjs")).runForkBenchmarks();
if (!only || only === "desktop") await (await import("./desktop.mjs")).runDesktopBenchmarks();
if (!only || only === "models") await (await import("./models.mjs")).runModelBenchmarks();
if (!only || only === "volumes") await (await import("./volumes.mjs")).runVolumeBenchmarks();
if (!only || only === "tracing") await (await import("./tracing.mjs")).runTracingBenchmarks();
if (!only || only === "egress") await (await import("./egress.mjs")).runEgressBenchmarks();
if (!only || only === "dashboard") await (await import("./dashboard.mjs")).runDashboardBenchmarks();
if (!only || only === "cluster") await (await import("./cluster.mjs")).runClusterBenchmarks();
if (!only || only === "cluster-templates") await (await import("./cluster-templates.mjs")).runClusterTemplateBenchmarks();
if (!only || only === "cluster-moves") await (await import("./cluster-moves.mjs")).runClusterMoveBenchmarks();
