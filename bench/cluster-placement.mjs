// Placement in a cluster: the decision itself (the pure placeCreate over 3 and 100 node records, beside picking the
// first node that can take the sandbox), creates per second through one node with 1 node vs 2 nodes in the cluster,
// and one create's latency placed on another node vs made where it arrived (both nodes in this process, on the
// machine's two cores: a second node adds no CPU here, so this measures what placement and the forward cost, not
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

async function createRate(via, count, concurrency) {
  const ids = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        const sandbox = await Sandbox.create("base", { ...via.opts, timeoutMs: 600_000 });
        ids.push(sandbox.sandboxId);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { rate: count / seconds, ids };
}

/** `startNats` and `startNode` from cluster.mjs; the owners of the created sandboxes are read from each node's own list. */
export async function runPlacementCreateBenchmarks({ startNats, startNode }) {
  const count = Number(process.env.BENCH_CLUSTER_CREATES ?? 40);
  const concurrency = 4;
  process.stdout.write(`\n== cluster: creates per second through node A, 1 node vs 2 (${count} creates, ${concurrency} at a time) ==\n`);
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const nats = await startNats();
  const nodes = [];
  const killAll = async (ids) => {
    for (const id of ids) await Sandbox.kill(id, nodes[0].opts).catch(() => undefined);
  };
  try {
    nodes.push(await startNode("place-a", nats.url, apiKey));
    const [a] = nodes;
    await killAll((await createRate(a, 4, 2)).ids);
    const alone = await createRate(a, count, concurrency);
    await killAll(alone.ids);
    nodes.push(await startNode("place-b", nats.url, apiKey));
    const b = nodes[1];
    // Until A has B's record (a heartbeat), placement does not know B.
    for (let i = 0; i < 100; i++) {
      const listed = await fetch(`${a.opts.apiUrl}/burrow/v1/nodes`, { headers: { "X-API-Key": apiKey } }).then((r) => r.json());
      if (listed.nodes.filter((n) => n.status === "up" && n.load.templates?.includes("base")).length === 2) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await killAll((await createRate(a, 4, 2)).ids);
    const two = await createRate(a, count, concurrency);
    const onB = (await Sandbox.list({ ...b.opts, limit: 100, apiHeaders: await pinHeaders(nats.url, "GET", "/v2/sandboxes", "place-b") }).nextItems()).length;
    await killAll(two.ids);
    report("creates/s through A, 2 nodes (1 machine)", two.rate, "/s", alone.rate, "A alone in the cluster");
    process.stdout.write(`  placed on B: ${onB} of ${count}\n`);
    // One create's latency when placed on another node: A cordoned, so every create through A goes to B, beside
    // creates made by B itself (marked forwarded), interleaved.
    await fetch(`${a.opts.apiUrl}/burrow/v1/nodes/place-a/cordon`, { method: "POST", headers: { "X-API-Key": apiKey } });
    const viaA = [];
    const atB = [];
    for (let i = 0; i < 20; i++) {
      const pinnedB = { ...b.opts, apiHeaders: await pinHeaders(nats.url, "POST", "/v2/sandboxes", "place-b") };
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
    for (const node of nodes.reverse()) {
      await node.server.close();
      await node.orchestrator.shutdown();
      rmSync(node.stateDir, { recursive: true, force: true });
    }
    await nats.stop();
  }
}
