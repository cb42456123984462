// What exact team limits across a cluster cost (packages/server/src/cluster/team-ledger.ts). First the admission
// alone, in this process on one nats-server: a create's admission of a team with a limit through the ledger (read, then a
// checked write: stream info, read, expected-sequence write) and its settle when the create answers, beside the same admission on one
// machine (TeamQuotas.admit, no NATS). Then whole creates with the official SDK on a cluster node: a team with a
// limit (through the ledger) beside a team without one (no round trip) on the same node, and creates on a server
// without --cluster, all interleaved in one run.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { openClusterKv } from "../packages/server/dist/cluster/cluster-kv.js";
import { TeamLedger } from "../packages/server/dist/cluster/team-ledger.js";
import { NO_USAGE, TeamQuotas, UNLIMITED_QUOTAS } from "../packages/server/dist/teams/team-quotas.js";
import { freeSubnet } from "./lib/host.mjs";
import { median, percentile, report, timeMs } from "./lib/stats.mjs";

const ADMISSIONS = Number(process.env.BENCH_QUOTA_ADMISSIONS ?? 300);
const CREATES = Number(process.env.BENCH_QUOTA_CREATES ?? 15);
const ask = { count: 1, cpuCount: 1, memoryMB: 512, diskMB: 1024, timeoutSec: 60, kind: "new" };

async function admissionCost(natsUrl) {
  const kv = await openClusterKv([natsUrl], "bench-quota", 1);
  try {
    const limits = { maxRunningSandboxes: 1_000_000 };
    const ledger = new TeamLedger({ kv: kv.teamQuotas, nodeName: "bench-quota", isUp: () => true, counted: () => true, logger: pino({ level: "silent" }) });
    const deps = { defaults: UNLIMITED_QUOTAS, overrides: () => limits, usage: () => ({ ...NO_USAGE }), runningBuilds: () => 0 };
    const local = new TeamQuotas(deps);
    const held = { sandboxes: 1, vcpu: 1, memoryMB: 512, diskMB: 1024, builds: 0 };
    const check = (view) => {
      if (view.held.sandboxes + 1 > limits.maxRunningSandboxes) throw new Error("over");
    };
    const viaLedger = [];
    const settle = [];
    const onOneMachine = [];
    for (let i = 0; i < 20; i++) await (await ledger.reserve("bench-team", held, 1, check)).settle([]);
    for (let i = 0; i < ADMISSIONS; i++) {
      let hold;
      viaLedger.push(await timeMs(async () => (hold = await ledger.reserve("bench-team", held, 1, check))));
      // In the server the settle runs once the create answered, off its path; timed here for what it costs.
      settle.push(await timeMs(() => hold.settle([])));
      onOneMachine.push(await timeMs(async () => local.admit("bench-team", ask).release()));
    }
    report("team admission through the ledger, p50", median(viaLedger), "ms", median(onOneMachine), "one machine (no NATS)");
    report("team admission through the ledger, p95", percentile(viaLedger, 95), "ms", percentile(onOneMachine, 95), "one machine p95");
    report("  its settle after the answer, p50", median(settle), "ms");
  } finally {
    await kv.close();
  }
}

async function adminFetch(url, apiKey, method, path, body) {
  const res = await fetch(`${url}${path}`, { method, headers: { "X-API-Key": apiKey, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function createCost(natsUrl, startNode) {
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const node = await startNode("bench-quota-node", natsUrl, apiKey);
  const stateDir = (await import("node:fs")).mkdtempSync("/var/tmp/burrow-bench-quota-alone-");
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance: `q${randomBytes(2).toString("hex")}`, subnet: freeSubnet(), pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench quota alone] ${line}\n`),
  });
  const alone = await startServer({ host: "127.0.0.1", port: 0, stateDir, apiKey }, { orchestrator, logger: pino({ level: "warn" }) });
  try {
    const aloneUrl = `http://127.0.0.1:${alone.port}`;
    const teamKey = async (url, quotas) => {
      const team = await adminFetch(url, apiKey, "POST", "/burrow/v1/teams", { name: `bench-${randomBytes(3).toString("hex")}` });
      if (quotas) await adminFetch(url, apiKey, "PATCH", `/burrow/v1/teams/${team.teamID}`, { quotas });
      return team.adminKey.key;
    };
    const limitedKey = await teamKey(node.opts.apiUrl, { maxRunningSandboxes: 1000 });
    const freeKey = await teamKey(node.opts.apiUrl);
    const aloneKey = await teamKey(aloneUrl, { maxRunningSandboxes: 1000 });
    const runs = [
      { name: "limited", opts: { ...node.opts, apiKey: limitedKey }, times: [] },
      { name: "unlimited", opts: { ...node.opts, apiKey: freeKey }, times: [] },
      { name: "alone", opts: { apiKey: aloneKey, apiUrl: aloneUrl, sandboxUrl: aloneUrl }, times: [] },
    ];
    for (let i = 0; i < CREATES + 2; i++) {
      for (const run of runs) {
        const t0 = performance.now();
        const sandbox = await Sandbox.create("base", { ...run.opts, timeoutMs: 600_000 });
        // The first two of each warm up.
        if (i >= 2) run.times.push(performance.now() - t0);
        await sandbox.kill();
      }
    }
    const [limited, unlimited, one] = runs.map((r) => r.times);
    report("create, team with a limit, cluster node, p50", median(limited), "ms", median(unlimited), "team without a limit, same node");
    report("create, team with a limit, cluster node, p50", median(limited), "ms", median(one), "team with a limit, no --cluster");
  } finally {
    await alone.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
    await node.server.close();
    await node.orchestrator.shutdown();
    rmSync(node.stateDir, { recursive: true, force: true });
  }
}

/** `startNats`, `startNode`: cluster.mjs's (this file is run from there, after the forward hop). */
export async function runClusterQuotaBenchmarks({ startNats, startNode }) {
  process.stdout.write("\n== cluster: exact team limits (team ledger, 1 nats-server) ==\n");
  const nats = await startNats();
  try {
    await admissionCost(nats.url);
    await createCost(nats.url, startNode);
  } finally {
    await nats.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { startNats, startNode } = await import("./cluster.mjs");
  await runClusterQuotaBenchmarks({ startNats, startNode });
}
