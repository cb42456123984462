// Filesystem event flood: a sandbox writes N files in a watched directory while /health is probed every 50 ms.
// Reports the events published, the server's event-loop delay (in-process, perf_hooks) and /health latency, with
// the per-sandbox limit on (the defaults) and, as the baseline, with the limit lifted (merging window only).
//
//   node scripts/build.mjs && node bench/event-flood.mjs [--files 10000] [--only limited|unlimited] [--json]
//
// Runs its own server (state dir under /var/tmp, own instance tag and subnet) and removes everything at the end.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Sandbox } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { createBus, createBusMetrics } from "@burrow/bus";
import { resolveServerConfig, startServer } from "@burrow/server";
import { BusClient } from "@burrow/sdk";
import { Registry } from "prom-client";
import { pino } from "pino";
import { freeSubnet } from "./lib/host.mjs";

const args = process.argv.slice(2);
const FILES = Number(args[args.indexOf("--files") + 1] || 10_000) || 10_000;
const JSON_OUT = args.includes("--json");

async function publishedTotal(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split("\n").filter((l) => l.startsWith("burrow_bus_published_total")).reduce((s, l) => s + Number(l.split(" ").pop()), 0);
}

async function flood(url, opts, client) {
  const sandbox = await Sandbox.create("base", opts);
  try {
    const dir = "/home/user/flood";
    await sandbox.files.makeDir(dir);
    await client.watches.create(sandbox.sandboxId, dir, { recursive: true });
    const before = await publishedTotal(url);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    const health = [];
    let stop = false;
    const probes = (async () => {
      while (!stop) {
        const t0 = performance.now();
        await (await fetch(`${url}/health`)).arrayBuffer();
        health.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    loop.enable();
    const t0 = performance.now();
    await sandbox.commands.run(`cd ${dir} && for i in $(seq 1 ${FILES}); do echo "$i" > "f$i"; done`, { timeoutMs: 300_000 });
    const writeMs = performance.now() - t0;
    // Let the watch drain what envd still sends.
    let last = -1;
    for (let now = await publishedTotal(url); now !== last; now = await publishedTotal(url)) {
      last = now;
      await new Promise((r) => setTimeout(r, 1000));
    }
    loop.disable();
    stop = true;
    await probes;
    health.sort((a, b) => a - b);
    return {
      writeMs: Math.round(writeMs),
      published: last - before,
      loopDelayMaxMs: Math.round(loop.max / 1e6),
      loopDelayP99Ms: Math.round(loop.percentile(99) / 1e6),
      healthMaxMs: Math.round(health.at(-1)),
      healthP50Ms: Math.round(health[Math.floor(health.length / 2)]),
      healthProbes: health.length,
    };
  } finally {
    await sandbox.kill();
  }
}

async function withServer(env, fn) {
  Object.assign(process.env, env);
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-flood-");
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance: `b${randomBytes(2).toString("hex")}`, subnet: freeSubnet(), pool: { template: "base", size: 1 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const registry = new Registry();
  const bus = await createBus({ kind: "embedded", path: join(stateDir, "bus.db"), metrics: createBusMetrics(registry) });
  // This script is the process's entry: its environment (with the BURROW_FS_EVENT* settings above) goes to the resolver.
  const config = resolveServerConfig({ host: "127.0.0.1", port: 0, stateDir }, process.env);
  const server = await startServer(config, { orchestrator, bus, registry, logger: pino({ level: "warn" }) });
  try {
    const url = `http://127.0.0.1:${server.port}`;
    const apiKey = readFileSync(join(stateDir, "api-key"), "utf8").trim();
    return await fn(url, { apiKey, apiUrl: url, sandboxUrl: url }, new BusClient({ baseUrl: url, apiKey }));
  } finally {
    await server.close();
    await bus.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
    for (const k of Object.keys(env)) delete process.env[k];
  }
}

const ONLY = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
const results = {};
if (ONLY !== "unlimited") results.limited = await withServer({}, flood);
if (ONLY !== "limited") results.unlimited = await withServer({ BURROW_FS_EVENTS_PER_SEC: "1000000000", BURROW_FS_EVENT_BURST: "1000000000" }, flood);
if (JSON_OUT) {
  process.stdout.write(`${JSON.stringify({ files: FILES, ...results })}\n`);
} else {
  process.stdout.write(`\n== filesystem event flood: ${FILES} files in a watched directory ==\n`);
  for (const [k, r] of Object.entries(results)) {
    process.stdout.write(`${k.padEnd(10)} published ${String(r.published).padStart(6)} events · event-loop delay max ${r.loopDelayMaxMs} ms (p99 ${r.loopDelayP99Ms}) · /health max ${r.healthMaxMs} ms (p50 ${r.healthP50Ms}, ${r.healthProbes} probes) · writes took ${r.writeMs} ms\n`);
  }
}
