#!/usr/bin/env node
// Model gateway: a streamed chat completion (SSE, 20 events) through the gateway vs straight to the same fake
// provider on loopback, interleaved in one run. Figures: p50/p95 time to the first byte and to the end, and the p50
// the gateway adds. The gateway runs in this process on a real SQLite store; callers authenticate with an API key.
import { createServer, request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { openStore } from "../packages/server/dist/store/store.js";
import { openSecrets } from "../packages/server/dist/secrets/index.js";
import { ModelGateway } from "../packages/server/dist/models/index.js";

const N = Number(process.env.BENCH_MODEL_REQUESTS ?? 400);
const EVENTS = Array.from({ length: 20 }, (_, i) => `data: {"id":"c1","choices":[{"index":0,"delta":{"content":"tok${i}"}}]}\n\n`);
EVENTS.push(`data: {"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}\n\n`, "data: [DONE]\n\n");

function fakeProvider() {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const e of EVENTS) res.write(e);
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const agent = new (await import("node:http")).Agent({ keepAlive: true, maxSockets: 1 });
function timed(url, headers) {
  const body = JSON.stringify({ model: "bench-model", stream: true, messages: [{ role: "user", content: "hi" }] });
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    let first = 0n;
    const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json", ...headers } }, (res) => {
      res.on("data", () => {
        if (first === 0n) first = process.hrtime.bigint();
      });
      res.on("end", () => resolve({ ttfb: Number(first - t0) / 1e6, total: Number(process.hrtime.bigint() - t0) / 1e6 }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

export async function runModelBenchmarks() {
  process.stdout.write("\n== model gateway ==\n");
  const dir = mkdtempSync(join(tmpdir(), "burrow-bench-models-"));
  const provider = await fakeProvider();
  const store = openStore(dir);
  const key = "bench-key-" + Math.random().toString(36).slice(2);
  const keyId = store.apiKeys.add(key).id;
  const gateway = new ModelGateway({
    store: store.models,
    secrets: openSecrets(dir, store.secrets),
    apiKeys: store.apiKeys,
    sandboxes: { live: () => undefined },
    orchestrator: { listSandboxes: () => [] },
    logger: pino({ level: "warn" }),
  });
  try {
    await gateway.listen();
    gateway.providers.create({ name: "fake", kind: "openai", baseUrl: `http://127.0.0.1:${provider.address().port}/v1`, apiKey: "sk-bench", models: ["bench-model"], priority: 0, weight: 1 }, keyId);
    const direct = `http://127.0.0.1:${provider.address().port}/v1/chat/completions`;
    const via = `${gateway.url}/v1/chat/completions`;
    for (let i = 0; i < 50; i++) {
      await timed(direct, {});
      await timed(via, { authorization: `Bearer ${key}` });
    }
    const d = { ttfb: [], total: [], cpuUs: 0 };
    const g = { ttfb: [], total: [], cpuUs: 0 };
    // CPU time per request (this process: client, provider and, on the gateway path, the gateway): unlike wall time
    // it hardly depends on how busy the machine is, so it shows what the gateway itself costs.
    const cpu = async (into, run) => {
      const c0 = process.cpuUsage();
      const r = await run();
      const c = process.cpuUsage(c0);
      into.cpuUs += c.user + c.system;
      return r;
    };
    for (let i = 0; i < N; i++) {
      const a = await cpu(d, () => timed(direct, {}));
      const b = await cpu(g, () => timed(via, { authorization: `Bearer ${key}` }));
      d.ttfb.push(a.ttfb), d.total.push(a.total), g.ttfb.push(b.ttfb), g.total.push(b.total);
    }
    const f = (x) => x.toFixed(2);
    process.stdout.write(`streamed chat completion, ${N} each, interleaved, one kept-alive connection per path\n`);
    process.stdout.write(`  direct   first byte p50 ${f(pct(d.ttfb, 50))} ms p95 ${f(pct(d.ttfb, 95))} ms · end p50 ${f(pct(d.total, 50))} ms p95 ${f(pct(d.total, 95))} ms\n`);
    process.stdout.write(`  gateway  first byte p50 ${f(pct(g.ttfb, 50))} ms p95 ${f(pct(g.ttfb, 95))} ms · end p50 ${f(pct(g.total, 50))} ms p95 ${f(pct(g.total, 95))} ms\n`);
    const added = g.total.map((t, i) => t - d.total[i]);
    process.stdout.write(`  added by the gateway (pairwise, to the end) p50 ${f(pct(added, 50))} ms p95 ${f(pct(added, 95))} ms (target p50 ≤ 2 ms)\n`);
    process.stdout.write(`  CPU per request: direct ${(d.cpuUs / N).toFixed(0)} µs, through the gateway ${(g.cpuUs / N).toFixed(0)} µs (load average ${loadavg()[0].toFixed(1)} on ${cpus().length} CPUs)\n`);
  } finally {
    await gateway.close();
    provider.close();
    agent.destroy();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runModelBenchmarks();
