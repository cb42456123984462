// Sandboxes that move between nodes (server/src/cluster/sandbox-moves.ts): two Burrow nodes in this process on one
// nats-server. Each round makes a sandbox on node A (B cordoned meanwhile) and writes BENCH_MOVE_MB of random bytes
// into it. Baseline: a filesystem pause and a connect (cold boot) on A itself. Move: `drain node-a {move: true}` with
// one sandbox running there — pause to the filesystem, publish (tar + sha256 + upload of the writable layer, the move
// record), B's take-over (fetch, verify, unpack, import) and B's resume (cold boot) —, with the nodes' own timings of
// the publish and the take-over from their log lines. Same sandbox size, same machine; both nodes share its cores.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { median, report } from "./lib/stats.mjs";
import { nodeLog, startNats, startNode } from "./cluster.mjs";

const ROUNDS = Number(process.env.BENCH_MOVES ?? 3);
const WRITTEN_MB = Number(process.env.BENCH_MOVE_MB ?? 10);

/** The nodes' own timings, from their log lines. */
const nodeTimes = { published: [], taken: [] };
const logStream = nodeLog((entry) => {
  if (entry.msg === "published a paused sandbox: it can be resumed on another node") nodeTimes.published.push(entry.ms);
  if (entry.msg === "sandbox moved to this node (filesystem-paused)" && entry.ms !== undefined) nodeTimes.taken.push(entry.ms);
});

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export async function runClusterMoveBenchmarks() {
  process.stdout.write(`\n== cluster: sandboxes moved between nodes (2 nodes in one process, 1 nats-server, ${WRITTEN_MB} MB written) ==\n`);
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const nats = await startNats();
  const nodes = [];
  const made = [];
  try {
    nodes.push(await startNode("move-a", nats.url, apiKey, { log: logStream, templates: true }));
    nodes.push(await startNode("move-b", nats.url, apiKey, { log: logStream, templates: true }));
    const [a, b] = nodes;
    const post = async (path, body) => {
      const res = await fetch(`${a.url}${path}`, { method: "POST", headers: { "X-API-Key": apiKey, "content-type": "application/json" }, body: JSON.stringify(body ?? {}) });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const onA = async () => {
      await post("/burrow/v1/nodes/move-b/cordon");
      try {
        const sandbox = await Sandbox.create("base", { ...a.opts, timeoutMs: 600_000 });
        made.push(sandbox);
        await sandbox.commands.run(`head -c ${WRITTEN_MB}M /dev/urandom > /home/user/blob`);
        return sandbox;
      } finally {
        await post("/burrow/v1/nodes/move-b/uncordon");
      }
    };
    // B's mirror has A's record (and A B's) before the first round.
    await new Promise((r) => setTimeout(r, 4000));
    const localPause = [];
    const localResume = [];
    const moves = [];
    for (let i = 0; i < ROUNDS; i++) {
      const local = await onA();
      localPause.push((await timed(() => local.pause({ keepMemory: false }))).ms);
      localResume.push((await timed(() => Sandbox.connect(local.sandboxId, { ...a.opts, timeoutMs: 600_000 }))).ms);
      const moving = await onA();
      const { ms, value } = await timed(() => post("/burrow/v1/nodes/move-a/drain", { move: true, timeout: 600 }));
      await post("/burrow/v1/nodes/move-a/uncordon");
      if (value.moved?.[0]?.node !== "move-b") throw new Error(`the drain did not move the sandbox: ${JSON.stringify(value)}`);
      moves.push(ms);
      // The moved sandbox answers on B with its bytes.
      const size = (await moving.commands.run("stat -c %s /home/user/blob")).stdout.trim();
      if (Number(size) !== WRITTEN_MB * 2 ** 20) throw new Error(`moved sandbox has ${size} bytes`);
    }
    report("local: filesystem pause on A, p50", median(localPause), "ms", undefined, undefined);
    report("local: connect (cold boot) on A, p50", median(localResume), "ms", undefined, undefined);
    report("move A → B (drain of one sandbox: pause, publish, take-over, resume), p50", median(moves), "ms", median(localPause) + median(localResume), "local pause + resume");
    report(`  publish by A (${WRITTEN_MB} MB writable layer: tar, sha256, upload, records), p50`, median(nodeTimes.published), "ms", undefined, undefined);
    report("  take-over by B (fetch, verify, unpack, import), p50", median(nodeTimes.taken), "ms", undefined, undefined);
  } finally {
    for (const sandbox of made) await sandbox.kill().catch(() => undefined);
    for (const node of nodes.reverse()) {
      await node.server.close();
      await node.orchestrator.shutdown();
      rmSync(node.stateDir, { recursive: true, force: true });
    }
    await nats.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runClusterMoveBenchmarks();
