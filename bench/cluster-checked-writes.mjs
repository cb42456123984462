// What checked writes cost (packages/server/src/cluster/cluster-kv.ts: checkedCreate/checkedPut expect the bucket
// stream's last sequence, since nats-server 2.9.10's per-key check is not atomic with replicas). On 3 nats-servers
// on the loopback with a replicated owners bucket (3 replicas), two connections on two servers: an owner claim
// (checkedCreate of a new key) and a revision-checked update beside the KV's own create/update (the per-key check,
// one request), interleaved; then the same while another connection writes other keys of the bucket (a write every
// 10 ms, and every 2 ms: far more than node records every 3 s per node and a busy cluster's claims), where a checked
// write reads again when the sequence moved; then a burst of 30 claims at once over both connections.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkedCreate, checkedPut, openClusterKv } from "../packages/server/dist/cluster/cluster-kv.js";
import { freePort } from "./lib/host.mjs";
import { median, percentile, report, timeMs } from "./lib/stats.mjs";

const NATS_SERVER = "/usr/sbin/nats-server";
const ROUNDS = Number(process.env.BENCH_CHECKED_ROUNDS ?? 200);

/** `size` nats-servers with JetStream routed to each other on the loopback (also cluster-placement.mjs's). */
export async function startNatsCluster(size) {
  const members = [];
  for (let i = 0; i < size; i++) members.push({ name: `bench-nats-${i + 1}`, port: await freePort(), clusterPort: await freePort(), storeDir: mkdtempSync(join(tmpdir(), "burrow-bench-natsc-")) });
  for (const m of members) {
    const routes = members.filter((o) => o !== m).map((o) => `nats://127.0.0.1:${o.clusterPort}`).join(",");
    m.proc = spawn(NATS_SERVER, ["-a", "127.0.0.1", "-p", String(m.port), "-n", m.name, "-js", "-sd", m.storeDir, "--cluster_name", "burrow-bench", "--cluster", `nats://127.0.0.1:${m.clusterPort}`, "--routes", routes], { stdio: "ignore" });
  }
  const stop = async () => {
    for (const m of members) {
      if (m.proc.exitCode === null && m.proc.signalCode === null) {
        const exited = new Promise((r) => m.proc.once("exit", r));
        process.kill(m.proc.pid, "SIGTERM");
        await exited;
      }
      rmSync(m.storeDir, { recursive: true, force: true });
    }
  };
  try {
    for (const m of members) {
      const deadline = Date.now() + 10_000;
      while (!(await new Promise((resolve) => netConnect(m.port, "127.0.0.1").once("connect", function () { this.destroy(); resolve(true); }).once("error", () => resolve(false))))) {
        if (m.proc.exitCode !== null || Date.now() > deadline) throw new Error(`${m.name} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { urls: members.map((m) => `nats://127.0.0.1:${m.port}`), stop };
}

const value = (n) => new TextEncoder().encode(JSON.stringify({ v: 3, node: "bench", n }));

/** `ROUNDS` claims and updates, checked and per-key interleaved, on `kv`; contended refusals counted, not timed. */
async function measure(kv, prefix) {
  const t = { claim: [], create: [], put: [], update: [], contended: 0 };
  for (let i = 0; i < ROUNDS; i++) {
    let rev = 0;
    try {
      t.claim.push(await timeMs(async () => (rev = await checkedCreate(kv, `${prefix}c${i}`, value(i)))));
      t.put.push(await timeMs(() => checkedPut(kv, `${prefix}c${i}`, value(i + 1), rev)));
    } catch (err) {
      if (err?.reason !== "cluster_contended") throw err;
      t.contended++;
    }
    let lrev = 0;
    t.create.push(await timeMs(async () => (lrev = await kv.create(`${prefix}k${i}`, value(i)))));
    t.update.push(await timeMs(() => kv.update(`${prefix}k${i}`, value(i + 1), lrev)));
  }
  return t;
}

/** Writes of other keys from `kv` every `everyMs` until stopped. */
function noise(kv, everyMs) {
  let on = true;
  const done = (async () => {
    for (let n = 0; on; n++) {
      await kv.put(`noise-${n % 16}`, value(n));
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return async () => {
    on = false;
    await done;
  };
}

export async function runCheckedWriteBenchmarks() {
  const cluster = await startNatsCluster(3);
  const a = await openClusterKv([cluster.urls[0]], "bench-a", 3);
  const b = await openClusterKv([cluster.urls[1]], "bench-b", 3);
  try {
    for (let i = 0; i < 20; i++) await checkedCreate(a.owners, `warm${i}`, value(i));
    const quiet = await measure(a.owners, "q");
    report("owner claim, checked (3 servers, R3), p50", median(quiet.claim), "ms", median(quiet.create), "KV create (per-key check)");
    report("owner claim, checked, p95", percentile(quiet.claim, 95), "ms", percentile(quiet.create, 95), "KV create p95");
    report("revision-checked update, checked, p50", median(quiet.put), "ms", median(quiet.update), "KV update (per-key check)");
    for (const everyMs of [10, 2]) {
      const stop = noise(b.owners, everyMs);
      let busy;
      try {
        busy = await measure(a.owners, `n${everyMs}-`);
      } finally {
        await stop();
      }
      report(`owner claim, other keys written every ${everyMs} ms, p50`, median(busy.claim), "ms", median(busy.create), "KV create, same noise");
      report(`owner claim, other keys written every ${everyMs} ms, p95`, percentile(busy.claim, 95), "ms", percentile(busy.create, 95), "KV create p95");
      report(`  claims refused as contended (of ${ROUNDS})`, busy.contended, "");
    }
    const burst = async (create) => timeMs(() => Promise.all(Array.from({ length: 30 }, (_, i) => create(i % 2 ? a.owners : b.owners, i))));
    const checked = [];
    const perKey = [];
    for (let r = 0; r < 5; r++) {
      checked.push(await burst((kv, i) => checkedCreate(kv, `burst${r}-c${i}`, value(i))));
      perKey.push(await burst((kv, i) => kv.create(`burst${r}-k${i}`, value(i))));
    }
    report("30 claims at once over 2 servers, checked, median", median(checked), "ms", median(perKey), "KV create");
  } finally {
    await a.close();
    await b.close();
    await cluster.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runCheckedWriteBenchmarks();
