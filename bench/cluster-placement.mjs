// Placement in a cluster: the decision itself (the pure placeCreate over 3 and 100 node records, beside picking the
// first node that can take the sandbox), creates per second through one node with 1, 2 and 3 nodes in the cluster
// (on one nats-server and on a 3-server NATS cluster),
// and one create's latency placed on another node vs made where it arrived (both nodes in this process, on the
// machine's two cores: more nodes add no CPU here, so this measures what placement and the forward cost, not
// what a second machine would give).
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { placeCreate } from "../packages/server/dist/cluster/placement.js";
import { pinHeaders } from "./lib/forward-pin.mjs";
import { median, percentile, report } from "./lib/stats.mjs";

const GiB = 1024 ** 3;

function records(count) {
  const templates = new Set(["base", "tpl-base", "python", "tpl-python"]);
  return Array.from({ length: count }, (_, i) => ({
    name: `node-${i}`,
    up: i % 17 !== 5,
    cordoned: i % 23 === 7,
    templates,
    sandboxes: (i * 37) % 400,
    capacity: 2000,
    freeMemoryBytes: (8 + (i % 9)) * GiB,
    warm: i % 11 === 3 ? 1 : 0,
  }));
}

/** The same records with CPU figures (placement adds busy share and committed vCPUs per CPU to the score). */
function withCpu(nodes) {
  return nodes.map((n, i) => ({ ...n, cpu: { cpus: 8 * (1 + (i % 4)), busy: ((i * 13) % 100) / 100, committedVcpu: n.sandboxes * 2 } }));
}

/** What a cluster without placement would do: the first node that can take it. */
function firstNode(nodes, template) {
  return nodes.find((n) => n.up && !n.cordoned && n.templates?.has(template) && n.sandboxes < n.capacity)?.name;
}

/** Per-call time in µs: `rounds` batches of `batch` calls, so that the timer's resolution does not dominate. */
function perCall(fn, rounds = 300, batch = 200) {
  const out = [];
  for (let i = 0; i < 50 * batch; i++) fn();
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) fn();
    out.push(Number(process.hrtime.bigint() - t0) / 1e3 / batch);
  }
  return out;
}

export function runPlacementDecisionBenchmarks() {
  process.stdout.write("\n== cluster: placement decision (pure function) ==\n");
  for (const count of [3, 100]) {
    const nodes = records(count);
    let sink = 0;
    const placed = perCall(() => (sink += placeCreate(nodes, { template: ["base"], self: "node-0" }).order.length));
    const first = perCall(() => (sink += firstNode(nodes, "base")?.length ?? 0));
    report(`placeCreate over ${count} node records, p50`, median(placed), "µs", median(first), "first node that can take it");
    report(`placeCreate over ${count} node records, p95`, percentile(placed, 95), "µs", percentile(first, 95), "first node p95");
    const cpuNodes = withCpu(nodes);
    const byCpu = perCall(() => (sink += placeCreate(cpuNodes, { template: ["base"], self: "node-0" }).order.length));
    report(`placeCreate over ${count} records with CPU figures, p50`, median(byCpu), "µs", median(placed), "the same without CPU");
    if (sink < 0) process.stdout.write("");
  }
}

/** A create that fails (a 504 when envd is slow on this loaded machine) is counted, not fatal: the rate is of successes. */
async function createRate(via, count, concurrency) {
  const ids = [];
  let failed = 0;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        try {
          const sandbox = await Sandbox.create("base", { ...via.opts, timeoutMs: 600_000 });
          ids.push(sandbox.sandboxId);
        } catch (error) {
          failed++;
          process.stderr.write(`[bench] a create through ${via.name} failed: ${error.message}\n`);
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { rate: ids.length / seconds, ids, failed };
}

/**
 * Waits until node `via` has `count` nodes up with the base template and a CPU busy share: placement knows no other
 * node, and a node's first record (one heartbeat) has no busy share yet, which placement counts as idle, so a node
 * just joined could draw the creates of its first heartbeat while the others report the loaded host's share.
 */
async function untilNodesUp(via, apiKey, count) {
  const ready = (n) => n.status === "up" && n.load.templates?.includes("base") && (!n.load.cpu || n.load.cpu.busy !== undefined);
  for (let i = 0; i < 150; i++) {
    const listed = await fetch(`${via.opts.apiUrl}/burrow/v1/nodes`, { headers: { "X-API-Key": apiKey } }).then((r) => r.json());
    if (listed.nodes.filter(ready).length === count) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`node ${via.name} did not see ${count} nodes up`);
}

/**
 * Creates per second through node A with 1, 2 and 3 nodes in the cluster (each joined after the previous figure),
 * and how many landed on each node (each node's own list, the request pinned there). `nats`: `{ urls }` of one
 * nats-server or of a 3-server cluster (then the nodes' buckets and streams are replicated on all three).
 */
async function createsPerNodeCount({ startNode, nats, apiKey, label, count, concurrency, nodes }) {
  const rates = [];
  for (const name of ["a", "b", "c"]) {
    nodes.push(await startNode(`place-${name}`, nats.urls, apiKey));
    const a = nodes[0];
    await untilNodesUp(a, apiKey, nodes.length);
    await killAll(a, (await createRate(a, 4, 2)).ids);
    const run = await createRate(a, count, concurrency);
    const placed = [];
    for (const node of nodes) {
      const pinned = await pinHeaders(nats.urls[0], "GET", "/v2/sandboxes", node.name);
      placed.push(`${node.name.slice(-1).toUpperCase()} ${(await Sandbox.list({ ...node.opts, limit: 100, apiHeaders: pinned }).nextItems()).length}`);
    }
    await killAll(a, run.ids);
    rates.push(run.rate);
    const n = nodes.length;
    if (n === 1) report(`creates/s through A, 1 node, ${label}`, run.rate, "/s");
    else report(`creates/s through A, ${n} nodes, ${label}`, run.rate, "/s", rates[0], "A alone, same run");
    process.stdout.write(`  placed: ${placed.join(", ")} (of ${count}${run.failed ? `; ${run.failed} failed` : ""})\n`);
  }
}

async function killAll(via, ids) {
  for (const id of ids) await Sandbox.kill(id, via.opts).catch(() => undefined);
}

async function stopNodes(nodes) {
  for (const node of nodes.reverse()) {
    await node.server.close();
    await node.orchestrator.shutdown();
    rmSync(node.stateDir, { recursive: true, force: true });
  }
  nodes.length = 0;
}

/**
 * `startNats` and `startNode` from cluster.mjs, `startNatsCluster` from cluster-checked-writes.mjs. Creates per
 * second with 1, 2, 3 nodes on one nats-server, then (unless BENCH_CLUSTER_NATS_CLUSTER=0) on 3 nats-servers; then
 * one create's latency placed on another node, on the one nats-server.
 */
export async function runPlacementCreateBenchmarks({ startNats, startNode, startNatsCluster }) {
  const count = Number(process.env.BENCH_CLUSTER_CREATES ?? 40);
  const concurrency = 4;
  process.stdout.write(`\n== cluster: creates per second through node A, 1 vs 2 vs 3 nodes (${count} creates, ${concurrency} at a time) ==\n`);
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const nodes = [];
  if (startNatsCluster && process.env.BENCH_CLUSTER_NATS_CLUSTER !== "0") {
    const natsCluster = await startNatsCluster(3);
    try {
      await createsPerNodeCount({ startNode, nats: natsCluster, apiKey, label: "3 nats-servers", count, concurrency, nodes });
    } finally {
      await stopNodes(nodes);
      await natsCluster.stop();
    }
  }
  const single = await startNats();
  const nats = { urls: [single.url] };
  try {
    await createsPerNodeCount({ startNode, nats, apiKey, label: "1 nats-server", count, concurrency, nodes });
    const [a, b, c] = nodes;
    // One create's latency when placed on another node: A and C cordoned, so every create through A goes to B,
    // beside creates made by B itself (marked forwarded), interleaved.
    for (const name of [a.name, c.name]) {
      await fetch(`${a.opts.apiUrl}/burrow/v1/nodes/${name}/cordon`, { method: "POST", headers: { "X-API-Key": apiKey } });
    }
    const viaA = [];
    const atB = [];
    for (let i = 0; i < 20; i++) {
      const pinnedB = { ...b.opts, apiHeaders: await pinHeaders(single.url, "POST", "/v2/sandboxes", b.name) };
      for (const [out, opts] of [[viaA, a.opts], [atB, pinnedB]]) {
        const t0 = performance.now();
        const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 600_000 });
        out.push(performance.now() - t0);
        await Sandbox.kill(sandbox.sandboxId, b.opts);
      }
    }
    report("create through A placed on B, p50", median(viaA), "ms", median(atB), "create at B itself");
    report("create through A placed on B, p95", percentile(viaA, 95), "ms", percentile(atB, 95), "at B p95");
  } finally {
    await stopNodes(nodes);
    await single.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { startNats, startNode } = await import("./cluster.mjs");
  const { startNatsCluster } = await import("./cluster-checked-writes.mjs");
  await runPlacementCreateBenchmarks({ startNats, startNode, startNatsCluster });
}
