// The cluster's forward hop: two Burrow nodes in this process (each its own orchestrator, state directory, instance
// and subnet) joined to one nats-server with JetStream on the loopback, one sandbox on node B. The official e2b SDK
// runs `commands.run('true')` and `Sandbox.getInfo` against B directly (the baseline) and through A (forwarded to
// B), interleaved in the same run; the sandbox list through A (gathered from both nodes) beside B's own answer.
// Both nodes share this process's event loop and the machine's two cores, so the hop's CPU is counted on both sides.
// Then placement (cluster-placement.mjs): the decision's time, and creates per second through one node, 1, 2, 3 nodes;
// and exact team limits (cluster-quotas.mjs): an admission through the team ledger, creates of a team with a limit.
// Then what checked writes cost on 3 nats-servers (cluster-checked-writes.mjs): claims and updates, quiet and busy.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { median, percentile, report } from "./lib/stats.mjs";
import { freePort, freeSubnet } from "./lib/host.mjs";
import { pinHeaders } from "./lib/forward-pin.mjs";

const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 200);
const NATS_SERVER = "/usr/sbin/nats-server";

export async function startNats() {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), "burrow-bench-nats-"));
  const proc = spawn(NATS_SERVER, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore" });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise((resolve) => {
      const c = netConnect(port, "127.0.0.1");
      c.once("connect", () => (c.destroy(), resolve(true)));
      c.once("error", () => resolve(false));
    });
    if (up) break;
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error("nats-server did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        process.kill(proc.pid, "SIGTERM");
        await exited;
      }
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/** `natsUrl`: one server's URL, or a cluster's URLs (the node then replicates its buckets and streams on them). */
/**
 * A node of the bench's cluster in this process: its own orchestrator, state directory, instance and subnet.
 * `log`: a pino destination for its log at info (benches that read figures the nodes log), else warnings only.
 * `templates`: the node publishes and fetches templates (cluster-templates.ts), as the CLI's nodes do.
 */
export async function startNode(name, natsUrl, apiKey, { log, templates = false } = {}) {
  const stateDir = mkdtempSync(`/var/tmp/burrow-bench-cluster-${name}-`);
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance: `c${randomBytes(2).toString("hex")}`, subnet: freeSubnet(), pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench ${name}] ${line}\n`),
  });
  const server = await startServer(
    { host: "127.0.0.1", port: 0, stateDir, apiKey, cluster: { servers: Array.isArray(natsUrl) ? natsUrl : [natsUrl], nodeName: name } },
    {
      orchestrator,
      ...(templates ? { templates: orchestrator.templateBuilder, templateStore: orchestrator.templateBuilder.store } : {}),
      logger: log ? pino({ level: "info" }, log) : pino({ level: "warn" }),
    },
  );
  const url = `http://127.0.0.1:${server.port}`;
  return { name, stateDir, orchestrator, server, url, opts: { apiKey, apiUrl: url, sandboxUrl: url } };
}

/** A pino destination that hands each JSON line to `onEntry` and passes warnings (everything with BENCH_LOG) on. */
export function nodeLog(onEntry) {
  return {
    write(line) {
      const entry = JSON.parse(line);
      onEntry(entry);
      if (process.env.BENCH_LOG || entry.level >= 40) process.stderr.write(line);
    },
  };
}

async function timed(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export async function runClusterBenchmarks() {
  process.stdout.write("\n== cluster: the forward hop (2 nodes in one process, 1 nats-server) ==\n");
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const nats = await startNats();
  const nodes = [];
  let sandbox;
  try {
    // One after the other: the second node's subnet is chosen once the first one's bridge route exists.
    nodes.push(await startNode("bench-a", nats.url, apiKey));
    nodes.push(await startNode("bench-b", nats.url, apiKey));
    const [a, b] = nodes;
    sandbox = await Sandbox.create("base", { ...b.opts, timeoutMs: 600_000 });
    const viaA = await Sandbox.connect(sandbox.sandboxId, { ...a.opts, timeoutMs: 600_000 });
    const direct = { run: [], info: [] };
    const forwarded = { run: [], info: [] };
    for (let i = 0; i < 10; i++) {
      await sandbox.commands.run("true");
      await viaA.commands.run("true");
    }
    for (let i = 0; i < ROUNDS; i++) {
      // Interleaved, so that load on the machine falls on both alike.
      direct.run.push(await timed(() => sandbox.commands.run("true")));
      forwarded.run.push(await timed(() => viaA.commands.run("true")));
      direct.info.push(await timed(() => Sandbox.getInfo(sandbox.sandboxId, b.opts)));
      forwarded.info.push(await timed(() => Sandbox.getInfo(sandbox.sandboxId, a.opts)));
    }
    const lists = { own: [], merged: [] };
    for (let i = 0; i < 50; i++) {
      // Marked as forwarded (signed), node B answers from its own sandboxes alone: the list without the cluster.
      const ownList = await pinHeaders(nats.url, "GET", "/v2/sandboxes", b.name);
      lists.own.push(await timed(() => Sandbox.list({ ...b.opts, apiHeaders: ownList }).nextItems()));
      lists.merged.push(await timed(() => Sandbox.list(a.opts).nextItems()));
    }
    report("commands.run('true') through node A, p50", median(forwarded.run), "ms", median(direct.run), "direct to node B", "≤ +2 ms");
    report("commands.run('true') through node A, p95", percentile(forwarded.run, 95), "ms", percentile(direct.run, 95), "direct p95");
    report("  added by the hop, p50", median(forwarded.run) - median(direct.run), "ms", undefined, undefined, "≤ 2 ms");
    report("Sandbox.getInfo through node A, p50", median(forwarded.info), "ms", median(direct.info), "direct to node B");
    report("sandbox list through node A (2 nodes), p50", median(lists.merged), "ms", median(lists.own), "node B's own list");
  } finally {
    await sandbox?.kill().catch(() => undefined);
    for (const node of nodes.reverse()) {
      await node.server.close();
      await node.orchestrator.shutdown();
      rmSync(node.stateDir, { recursive: true, force: true });
    }
    await nats.stop();
  }
  // Imported here, as the two below: cluster-placement.mjs, run alone, imports this file for startNats and startNode.
  const { runPlacementCreateBenchmarks, runPlacementDecisionBenchmarks } = await import("./cluster-placement.mjs");
  const { startNatsCluster } = await import("./cluster-checked-writes.mjs");
  runPlacementDecisionBenchmarks();
  await runPlacementCreateBenchmarks({ startNats, startNode, startNatsCluster });
  // Imported here: cluster-quotas.mjs, run alone, imports this file for startNats and startNode.
  await (await import("./cluster-quotas.mjs")).runClusterQuotaBenchmarks({ startNats, startNode });
  await (await import("./cluster-checked-writes.mjs")).runCheckedWriteBenchmarks();
}

if (import.meta.url === `file://${process.argv[1]}`) await runClusterBenchmarks();
