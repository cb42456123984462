// Create latency with tracing off and on, in the same run, on one orchestrator: servers started one after the other
// on the same state directory, without an OTLP endpoint and with one (a collector on loopback that counts the spans
// it receives and discards them), in alternating rounds so that a machine getting busier does not favour either
// side. Creates are sequential through the official SDK, with no warm pool, so that every create runs every traced
// step (launch, claim, envd /init). Target: the two medians within 5 %.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { median, percentile, report } from "./lib/stats.mjs";
import { freeSubnet } from "./lib/host.mjs";

const ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 4);
const PER_ROUND = Number(process.env.BENCH_TRACING_CREATES ?? 8);

async function startCollector() {
  let spans = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      try {
        for (const rs of JSON.parse(body).resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
      } catch {
        // not a JSON export: counted as nothing
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}`, spans: () => spans };
}

async function round(orchestrator, stateDir, otlpEndpoint) {
  const server = await startServer(
    { host: "127.0.0.1", port: 0, stateDir, otlpEndpoint },
    { orchestrator, logger: pino({ level: "warn" }) },
  );
  const url = `http://127.0.0.1:${server.port}`;
  const opts = { apiKey: readFileSync(join(stateDir, "api-key"), "utf8").trim(), apiUrl: url, sandboxUrl: url };
  const times = [];
  try {
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = performance.now();
      const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 120_000 });
      times.push(performance.now() - t0);
      await sandbox.kill();
    }
  } finally {
    await server.close();
  }
  return times;
}

export async function runTracingBenchmarks() {
  process.stdout.write("\n== tracing: create latency with OpenTelemetry off and on ==\n");
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-tracing-");
  const instance = `t${randomBytes(2).toString("hex")}`;
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const collector = await startCollector();
  const off = [];
  const on = [];
  try {
    // One create each way first, not counted: the first launch after start warms caches.
    await round(orchestrator, stateDir, null);
    for (let r = 0; r < ROUNDS; r++) {
      off.push(...(await round(orchestrator, stateDir, null)));
      on.push(...(await round(orchestrator, stateDir, collector.url)));
    }
    report("create, tracing on (p50)", median(on), "ms", median(off), "tracing off", "≤ 1.05×");
    report("create, tracing on (p95)", percentile(on, 95), "ms", percentile(off, 95), "tracing off");
    process.stdout.write(`  ${on.length} traced creates exported ${collector.spans()} spans\n`);
  } finally {
    collector.server.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runTracingBenchmarks();
