// Bus benchmark: publish→deliver throughput and latency of 1 KB messages on the embedded and NATS backends,
// beside a raw @nats-io client baseline measured in the same run against the same nats-server.
//
//   npx tsc -b packages/bus && node bench/bus.mjs [--rounds 5] [--n 200000] [--json]
//
// Starts its own nats-server (JetStream, loopback, temp store) and stops it and removes the store at the end.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { EmbeddedBus, NatsBus } from "../packages/bus/dist/index.js";
import { freePort } from "./lib/host.mjs";

const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const ROUNDS = arg("rounds", 5);
const N_CORE = arg("n", 200_000);
const N_NATS = arg("n-nats", 100_000);
const N_DURABLE = arg("n-durable", 20_000);
const N_LAT = arg("n-latency", 3_000);
const SIZE = 1024;
const payload = new Uint8Array(SIZE).fill(97);
const yieldNow = () => new Promise((r) => setImmediate(r));

async function startNats() {
  const dir = mkdtempSync(join(tmpdir(), "burrow-bench-nats-"));
  const port = await freePort();
  const proc = spawn("/usr/sbin/nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" });
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((r) => {
      const c = netConnect(port, "127.0.0.1");
      c.once("connect", () => (c.destroy(), r(true)));
      c.once("error", () => r(false));
    });
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        process.kill(proc.pid, "SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---- measurements (each returns msgs/s or latency samples in µs) ----

/**
 * Bus core pub/sub: N publishes, timed until the subscriber has received all N. Built per backend from source, so
 * each backend's loop has its own type feedback, like the raw baseline's (one shared loop would be megamorphic).
 */
const busThroughputSource = async function busThroughput(bus, n) {
  const subject = `bench.tp.${Math.random().toString(36).slice(2)}`;
  const sub = bus.subscribe(subject, { maxPending: n + 1 });
  await bus.flush();
  let got = 0;
  const done = (async () => {
    for await (const _m of sub) if (++got === n) return;
  })();
  const t0 = process.hrtime.bigint();
  // Same loop shape as the raw baseline: publish is fire-and-forget; await it (and yield) once per 1024 messages.
  // (Awaiting every publish makes nats.js flush the socket per message, for raw clients and the bus alike.)
  for (let i = 0; i < n; i++) {
    const p = bus.publish(subject, payload);
    if ((i & 1023) === 1023) {
      await p;
      await yieldNow();
    }
  }
  await done;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  await sub.close();
  return n / secs;
}.toString();
const makeBusThroughput = () => new Function("payload", "yieldNow", `return ${busThroughputSource}`)(payload, yieldNow);
const embeddedThroughput = makeBusThroughput();
const natsThroughput = makeBusThroughput();

/** Raw nats.js: the same loop shape on a plain connection. */
async function rawThroughput(nc, n) {
  const subject = `bench.raw.${Math.random().toString(36).slice(2)}`;
  const sub = nc.subscribe(subject);
  await nc.flush();
  let got = 0;
  const done = (async () => {
    for await (const _m of sub) if (++got === n) return;
  })();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    nc.publish(subject, payload);
    if ((i & 1023) === 1023) await yieldNow();
  }
  await done;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  sub.unsubscribe();
  return n / secs;
}

/** One message in flight at a time: publish, wait for delivery. */
async function busLatency(bus, n) {
  const subject = `bench.lat.${Math.random().toString(36).slice(2)}`;
  const sub = bus.subscribe(subject);
  await bus.flush();
  const it = sub[Symbol.asyncIterator]();
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await bus.publish(subject, payload);
    await it.next();
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  await sub.close();
  return samples;
}

async function rawLatency(nc, n) {
  const subject = `bench.rawlat.${Math.random().toString(36).slice(2)}`;
  const sub = nc.subscribe(subject);
  await nc.flush();
  const it = sub[Symbol.asyncIterator]();
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    nc.publish(subject, payload);
    await it.next();
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  sub.unsubscribe();
  return samples;
}

/** Durable path: publishDurable N (stream-acknowledged), then a durable consumer takes and acks all N. */
async function durableThroughput(bus, n) {
  const name = `BENCH${Math.random().toString(36).slice(2, 8).toUpperCase()}`;
  await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
  const t0 = process.hrtime.bigint();
  const window = [];
  for (let i = 0; i < n; i++) {
    window.push(bus.publishDurable(`${name}.x`, payload));
    if (window.length === 256) await Promise.all(window.splice(0));
  }
  await Promise.all(window);
  const t1 = process.hrtime.bigint();
  const c = await bus.consumer(name, { durable: "bench" });
  for (let i = 0; i < n; i++) {
    const m = await c.next({ timeoutMs: 10_000 });
    if (!m) throw new Error("durable bench: message missing");
    await m.ack();
  }
  const t2 = process.hrtime.bigint();
  await c.close();
  await bus.deleteStream(name);
  return { publish: n / (Number(t1 - t0) / 1e9), consume: n / (Number(t2 - t1) / 1e9) };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (v) => Math.round(v).toLocaleString("en-US");

async function main() {
  const server = await startNats();
  const dir = mkdtempSync(join(tmpdir(), "burrow-bench-embedded-"));
  const embedded = new EmbeddedBus({ path: join(dir, "bus.db") });
  const natsBus = await NatsBus.connect({ servers: server.url });
  const raw = await connect({ servers: server.url });
  const tp = { embedded: [], nats: [], raw: [] };
  const lat = { embedded: [], nats: [], raw: [] };
  const dur = { embedded: [], nats: [] };
  try {
    // Warm up JIT and connections.
    await embeddedThroughput(embedded, 20_000);
    await natsThroughput(natsBus, 20_000);
    await rawThroughput(raw, 20_000);
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate NATS backend and raw client so drift on the machine hits both alike.
      tp.embedded.push(await embeddedThroughput(embedded, N_CORE));
      if (r % 2 === 0) {
        tp.raw.push(await rawThroughput(raw, N_NATS));
        tp.nats.push(await natsThroughput(natsBus, N_NATS));
      } else {
        tp.nats.push(await natsThroughput(natsBus, N_NATS));
        tp.raw.push(await rawThroughput(raw, N_NATS));
      }
      lat.embedded.push(...(await busLatency(embedded, N_LAT)));
      lat.nats.push(...(await busLatency(natsBus, N_LAT)));
      lat.raw.push(...(await rawLatency(raw, N_LAT)));
    }
    for (let r = 0; r < Math.min(ROUNDS, 3); r++) {
      dur.embedded.push(await durableThroughput(embedded, N_DURABLE));
      dur.nats.push(await durableThroughput(natsBus, Math.min(N_DURABLE, 5000)));
    }
  } finally {
    await raw.close();
    await natsBus.close();
    await embedded.close();
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  }

  const result = {
    messageBytes: SIZE,
    rounds: ROUNDS,
    core: {
      embedded: { msgsPerSec: median(tp.embedded), p50us: pct(lat.embedded, 50), p99us: pct(lat.embedded, 99) },
      nats: { msgsPerSec: median(tp.nats), p50us: pct(lat.nats, 50), p99us: pct(lat.nats, 99) },
      rawNats: { msgsPerSec: median(tp.raw), p50us: pct(lat.raw, 50), p99us: pct(lat.raw, 99) },
    },
    durable: {
      embedded: { publishPerSec: median(dur.embedded.map((d) => d.publish)), consumeAckPerSec: median(dur.embedded.map((d) => d.consume)) },
      nats: { publishPerSec: median(dur.nats.map((d) => d.publish)), consumeAckPerSec: median(dur.nats.map((d) => d.consume)) },
    },
  };
  // Paired per round (the two runs are back to back), then the median: robust to drift from other load on the machine.
  const paired = tp.nats.map((v, i) => v / tp.raw[i]);
  result.perRound = { embedded: tp.embedded.map(Math.round), nats: tp.nats.map(Math.round), rawNats: tp.raw.map(Math.round), natsOverRaw: paired.map((r) => +r.toFixed(3)) };
  result.ratios = {
    natsBackendVsRaw: median(paired),
    embeddedVsRaw: result.core.embedded.msgsPerSec / result.core.rawNats.msgsPerSec,
  };
  result.targets = {
    embeddedAtLeast100k: result.core.embedded.msgsPerSec >= 100_000,
    natsBackendAtLeastHalfOfRaw: result.ratios.natsBackendVsRaw >= 0.5,
  };
  if (args.includes("--json")) {
    console.log(JSON.stringify(result, null, 2));
    return;
  }
  console.log(`bus benchmark: ${SIZE} B messages, median of ${ROUNDS} rounds (throughput), latency percentiles over ${ROUNDS * N_LAT} round trips`);
  console.log("");
  console.log("publish→deliver (core)   msgs/s        p50 µs   p99 µs");
  for (const [k, v] of Object.entries(result.core)) {
    console.log(`  ${k.padEnd(22)} ${fmt(v.msgsPerSec).padStart(10)}   ${v.p50us.toFixed(1).padStart(6)}   ${v.p99us.toFixed(1).padStart(6)}`);
  }
  console.log("");
  console.log(`  per round: nats ${result.perRound.nats.map(fmt).join(" / ")}; raw ${result.perRound.rawNats.map(fmt).join(" / ")}`);
  console.log(`  NATS backend / raw NATS client (median of per-round ratios): ${(result.ratios.natsBackendVsRaw * 100).toFixed(1)}%  (target ≥ 50%: ${result.targets.natsBackendAtLeastHalfOfRaw ? "met" : "MISSED"})`);
  console.log(`  embedded: ${fmt(result.core.embedded.msgsPerSec)} msgs/s  (target ≥ 100,000: ${result.targets.embeddedAtLeast100k ? "met" : "MISSED"})`);
  console.log("");
  console.log("durable (stream-acknowledged publish, then pull + ack each)");
  for (const [k, v] of Object.entries(result.durable)) {
    console.log(`  ${k.padEnd(22)} publish ${fmt(v.publishPerSec).padStart(8)} msgs/s   consume+ack ${fmt(v.consumeAckPerSec).padStart(8)} msgs/s`);
  }
}

/** For bench/run.mjs. */
export const runBusBenchmarks = main;

// Run directly (`node bench/bus.mjs`), not when imported by bench/run.mjs.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) await main();
