// A team's limits across nodes admitted through the team ledger (cluster/team-ledger.ts) on a real nats-server with
// JetStream (one server, and the race again on a 3-server cluster with replicated buckets, where a per-key revision
// check is not enough on nats-server 2.9: team-ledger.ts): each "node" is a TeamQuotas with its own NATS connection and
// ledger, and its own store (what it created). Other nodes' sandboxes reach a node's usage only through the ledger
// here (their owner records never do): the worst case of a mirror that lags, where only the ledger stands between
// two nodes and a limit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { NatsCluster } from "../../../test/cluster/nats-cluster.js";
import { openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { TeamLedger } from "../src/cluster/team-ledger.js";
import { NO_USAGE, TeamQuotas, UNLIMITED_QUOTAS, type QuotaReservation, type SandboxAsk, type TeamQuotaOverrides, type TeamUsage } from "../src/teams/team-quotas.js";

const logger = pino({ level: "silent" });
const ask: SandboxAsk = { count: 1, cpuCount: 1, memoryMB: 512, diskMB: 1024, timeoutSec: 60, kind: "new" };

interface Node {
  name: string;
  quotas: TeamQuotas;
  /** Running sandboxes this node made, by team. */
  store: Map<string, number>;
  /** MiB of volumes this node has, by team. */
  volumes: Map<string, number>;
  ledger: TeamLedger;
}

const overrides = new Map<string, TeamQuotaOverrides>();
const down = new Set<string>();
const conns: ClusterKv[] = [];

async function node(servers: string[], name: string, shared = true, replicas = 1): Promise<Node> {
  const kv = await openClusterKv(servers, name, replicas);
  conns.push(kv);
  const store = new Map<string, number>();
  const volumes = new Map<string, number>();
  // This node's own sandboxes are its store's; others' never reach its usage here but through the ledger.
  const ledger = new TeamLedger({
    kv: kv.teamQuotas,
    nodeName: name,
    isUp: (n) => !down.has(n),
    counted: (_id, hold) => hold.node === name,
    logger,
  });
  const quotas = new TeamQuotas({
    defaults: UNLIMITED_QUOTAS,
    overrides: (teamId) => overrides.get(teamId) ?? {},
    usage: (teamId): TeamUsage => ({ ...NO_USAGE, runningSandboxes: store.get(teamId) ?? 0, diskMB: (store.get(teamId) ?? 0) * ask.diskMB + (volumes.get(teamId) ?? 0) }),
    runningBuilds: () => 0,
    ledger: shared ? ledger : undefined,
    localVolumesMB: (teamId) => volumes.get(teamId) ?? 0,
  });
  return { name, quotas, store, volumes, ledger };
}

/** A create: admitted, made (in the store) and answered, or refused. */
async function create(n: Node, team: string): Promise<boolean> {
  let reservation: QuotaReservation;
  try {
    reservation = await n.quotas.admitShared(team, ask);
  } catch (err) {
    if ((err as { reason?: string }).reason?.startsWith("team_quota_")) return false;
    throw err;
  }
  await new Promise((r) => setTimeout(r, Math.random() * 20));
  n.store.set(team, (n.store.get(team) ?? 0) + 1);
  reservation.release([`sbx${Math.random().toString(36).slice(2, 10)}`]);
  return true;
}

/** Rounds of 4 creates on each of two nodes at once, limits 1 to 3: never more made than the limit. */
async function race(a: Node, b: Node, prefix: string): Promise<void> {
  for (let round = 0; round < 8; round++) {
    const team = `${prefix}-${round}`;
    const limit = 1 + (round % 3);
    overrides.set(team, { maxRunningSandboxes: limit });
    const results = await Promise.all([...Array.from({ length: 4 }, () => create(a, team)), ...Array.from({ length: 4 }, () => create(b, team))]);
    const made = (a.store.get(team) ?? 0) + (b.store.get(team) ?? 0);
    expect(made, `round ${round}, limit ${limit}`).toBeLessThanOrEqual(limit);
    expect(made, `round ${round}: one create at least`).toBeGreaterThanOrEqual(1);
    expect(results.filter(Boolean).length).toBe(made);
  }
}

afterAll(async () => {
  for (const c of conns.splice(0)) await c.close();
});

describe("team ledger on a 3-server cluster (replicated bucket)", () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
  }, 120_000);
  afterAll(async () => {
    for (const c of conns.splice(0)) await c.close();
    await cluster?.stop();
  });

  it("creates of one team on two nodes, each on its own server, at the same instant never pass a limit of N", { timeout: 120_000 }, async () => {
    const [a, b] = [await node([cluster.urls[0]!], "ra", true, 3), await node([cluster.urls[1]!], "rb", true, 3)];
    await race(a, b, "r3race");
  });
});

describe("team ledger: a team's limits across nodes", () => {
  let nats: NatsServerFixture;
  const servers = () => [`nats://${nats.url}`];

  beforeAll(async () => {
    nats = await NatsServerFixture.start();
  });
  afterAll(async () => {
    for (const c of conns.splice(0)) await c.close();
    await nats?.stop();
  });

  it("creates of one team on two nodes at the same instant never pass a limit of N together (repeated)", async () => {
    await race(await node(servers(), "a"), await node(servers(), "b"), "race");
  });

  it("a create placed on another node is counted once: the receiving node takes over the placing node's hold", async () => {
    const [a, b] = [await node(servers(), "a2"), await node(servers(), "b2")];
    overrides.set("placed", { maxRunningSandboxes: 1 });
    const atA = await a.quotas.admitShared("placed", ask);
    expect(atA.holdId).toBeDefined();
    // The same create, forwarded to B with the hold's id: admitted (not refused for A's hold of the same create).
    const atB = await b.quotas.admitShared("placed", ask, atA.holdId);
    // Another create meanwhile, through either node: refused (the placed one holds the only place).
    await expect(a.quotas.admitShared("placed", ask)).rejects.toThrow(/maxRunningSandboxes/);
    // B made nothing (it answered a status the placing node passes over): A's hold is back, A goes on under it.
    atB.release([]);
    await expect.poll(async () => Object.keys((await a.ledger.record("placed")).holds)).toEqual([atA.holdId]);
    await expect(b.quotas.admitShared("placed", ask)).rejects.toThrow(/maxRunningSandboxes/);
    // Placed on B again, and made there this time: one hold, B's, naming the sandbox; A's settle finds nothing.
    const again = await b.quotas.admitShared("placed", ask, atA.holdId);
    again.release(["sbxplaced"]);
    await expect.poll(async () => Object.values((await a.ledger.record("placed")).holds).map((h) => [h.node, h.sandboxIds])).toEqual([["b2", ["sbxplaced"]]]);
    atA.release([]);
    await new Promise((r) => setTimeout(r, 200));
    expect(Object.values((await a.ledger.record("placed")).holds).map((h) => h.node)).toEqual(["b2"]);
  });

  it("the create rate is the team's on every node, whichever node is asked", async () => {
    const [a, b] = [await node(servers(), "a3"), await node(servers(), "b3")];
    overrides.set("rate", { createsPerMinute: 3 });
    expect(await create(a, "rate")).toBe(true);
    expect(await create(b, "rate")).toBe(true);
    expect(await create(a, "rate")).toBe(true);
    for (const n of [a, b]) await expect(n.quotas.admitShared("rate", ask)).rejects.toThrow(/team quota createsPerMinute reached: your team started 3 sandboxes in the last minute and may start 3 per minute/);
  });

  it("disk counts what is held on every node", async () => {
    const [a, b] = [await node(servers(), "a4"), await node(servers(), "b4")];
    overrides.set("disk", { maxDiskMB: 2048 });
    const first = await a.quotas.admitShared("disk", ask);
    const second = await b.quotas.admitShared("disk", ask);
    await expect(a.quotas.admitShared("disk", ask)).rejects.toThrow(/team quota maxDiskMB reached: your team's sandboxes and volumes hold 2048 MiB of disk of 2048 MiB/);
    await expect(b.quotas.admitShared("disk", ask)).rejects.toThrow(/maxDiskMB/);
    first.release([]);
    second.release([]);
  });

  it("volumes count on every node: a node's figure is in the ledger once its volume is made, and gone once deleted", async () => {
    const [a, b] = [await node(servers(), "a8"), await node(servers(), "b8")];
    overrides.set("vols", { maxDiskMB: 3000 });
    const volume = await a.quotas.admitVolumeShared("vols", 2048);
    a.volumes.set("vols", 2048);
    volume.release();
    await expect.poll(async () => (await b.ledger.view("vols")).volumesMB).toBe(2048);
    await expect(b.quotas.admitShared("vols", ask)).rejects.toThrow(/team quota maxDiskMB reached: your team's sandboxes and volumes hold 2048 MiB of disk of 3000 MiB \(asked for 1024 MiB more\)/);
    await expect(b.quotas.admitVolumeShared("vols", 1024)).rejects.toThrow(/hold 2048 MiB of disk of 3000 MiB \(a volume takes 1024 MiB\)/);
    a.volumes.delete("vols");
    a.quotas.volumesChanged("vols");
    await expect.poll(async () => (await b.ledger.view("vols")).volumesMB).toBe(0);
    (await b.quotas.admitShared("vols", ask)).release([]);
  });

  it("concurrent builds are counted cluster-wide and released when they end", async () => {
    const [a, b] = [await node(servers(), "a5"), await node(servers(), "b5")];
    overrides.set("builds", { maxConcurrentBuilds: 1 });
    const build = await a.quotas.admitBuildShared("builds");
    await expect(b.quotas.admitBuildShared("builds")).rejects.toThrow(/team quota maxConcurrentBuilds reached: your team has 1 template builds running and may run 1 at once/);
    build!.release();
    await expect.poll(async () => (await b.ledger.view("builds")).held.builds).toBe(0);
    (await b.quotas.admitBuildShared("builds"))!.release();
  });

  it("holds of a node that is down no longer count", async () => {
    const [a, b] = [await node(servers(), "a6"), await node(servers(), "b6")];
    overrides.set("down", { maxRunningSandboxes: 1 });
    await a.quotas.admitShared("down", ask);
    await expect(b.quotas.admitShared("down", ask)).rejects.toThrow(/maxRunningSandboxes/);
    down.add("a6");
    (await b.quotas.admitShared("down", ask)).release([]);
  });

  it("without the ledger (each node's in-flight list), the same race passes the limit", async () => {
    const [a, b] = [await node(servers(), "a7", false), await node(servers(), "b7", false)];
    overrides.set("unshared", { maxRunningSandboxes: 1 });
    await Promise.all([create(a, "unshared"), create(b, "unshared")]);
    expect((a.store.get("unshared") ?? 0) + (b.store.get("unshared") ?? 0)).toBe(2);
  });
});
