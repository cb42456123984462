// Teams and keys shared through the cluster's buckets (cluster/team-sync.ts), on a real nats-server with JetStream
// and two real SQLite stores standing for two nodes: what one node makes the other imports under the same shared
// ids; a key of a node's default team lands in the other's default team; the instance admin key stays home; two
// nodes changing one key at once both keep their change (revision-checked three-way merge); a start pushes only what
// the bucket lacks, and a revocation made while apart still wins.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { pino } from "pino";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { decodeKey } from "../src/cluster/team-records.js";
import { TeamSync } from "../src/cluster/team-sync.js";
import { openStore, type Store } from "../src/store/store.js";
import { TeamStore } from "../src/teams/team-store.js";

const logger = pino({ level: "silent" });
let nats: NatsServerFixture;
let kv: ClusterKv;
const undo: Array<() => unknown> = [];

interface FakeNode {
  store: TeamStore;
  defaultTeamId: string;
  sync: TeamSync;
  revoked: number[];
}

beforeAll(async () => {
  nats = await NatsServerFixture.start();
  kv = await openClusterKv([`nats://${nats.url}`], "test", 1);
});
afterEach(async () => {
  for (const fn of undo.splice(0).reverse()) await fn();
  for (const bucket of [kv.teams, kv.keys]) for await (const key of await bucket.keys()) await bucket.purge(key);
});
afterAll(async () => {
  await kv?.close();
  await nats?.stop();
});

/** A node's team store (its own SQLite, its own default team and instance admin key) synced through the buckets. */
async function node(adminKey: string): Promise<FakeNode> {
  const dir = mkdtempSync(join(tmpdir(), "burrow-team-sync-"));
  const db: Store = openStore(dir);
  const store = new TeamStore(db.db);
  const defaultTeamId = store.createTeam("default").teamId;
  store.addKey(adminKey, { teamId: defaultTeamId, name: "admin", role: "member" });
  store.makeInstanceAdmin(adminKey);
  const revoked: number[] = [];
  const sync = await TeamSync.start({ teams: kv.teams, keys: kv.keys, store, defaultTeamId, logger, onRevoked: (id) => revoked.push(id) });
  undo.push(() => rmSync(dir, { recursive: true, force: true }), () => db.close(), async () => {
    await sync.flush();
    sync.close();
  });
  return { store, defaultTeamId, sync, revoked };
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

it("a team and keys made on one node authenticate on the other under the same ids; the instance admin stays home", async () => {
  const a = await node("e2b_admin_a_0000000000");
  const b = await node("e2b_admin_b_0000000000");
  const team = a.store.createTeam("acme");
  const teamKey = a.store.addKey("e2b_team_key_0000000001", { teamId: team.teamId, name: "ci", role: "admin" });
  const defaultKey = a.store.addKey("e2b_default_key_000002", { teamId: a.defaultTeamId, name: "ops", role: "member" });
  await until(() => b.store.verify("e2b_team_key_0000000001") !== undefined && b.store.verify("e2b_default_key_000002") !== undefined);
  expect(b.store.team(team.teamId)?.name).toBe("acme");
  const onB = b.store.verify("e2b_team_key_0000000001")!;
  expect([onB.publicId, onB.teamId, onB.name, onB.role]).toEqual([teamKey.publicId, team.teamId, "ci", "admin"]);
  // A key of A's default team is in B's default team; the default teams themselves are each node's own.
  expect(b.store.verify("e2b_default_key_000002")?.teamId).toBe(b.defaultTeamId);
  expect(b.store.verify("e2b_default_key_000002")?.publicId).toBe(defaultKey.publicId);
  expect(b.store.team(a.defaultTeamId)).toBeUndefined();
  expect(b.store.verify("e2b_admin_a_0000000000")).toBeUndefined();
  // The bucket holds the hash, never the key.
  const stored = new TextDecoder().decode((await kv.keys.get(teamKey.publicId))!.value);
  expect(stored).not.toContain("e2b_team_key_0000000001");
  expect(decodeKey(new TextEncoder().encode(stored)).hash).toMatch(/^[0-9a-f]{64}$/);

  // Changes go both ways: renamed and quotas on B, revoked on A.
  b.store.renameTeam(team.teamId, "acme-2");
  b.store.setQuotas(team.teamId, { maxRunningSandboxes: 3 });
  await until(() => a.store.team(team.teamId)?.name === "acme-2");
  await until(() => JSON.stringify(a.store.team(team.teamId)?.quotas) === JSON.stringify({ maxRunningSandboxes: 3 }));
  a.store.revokeKey(teamKey.id);
  await until(() => b.store.verify("e2b_team_key_0000000001") === undefined);
  expect(b.revoked).toEqual([onB.id]);
});

it("two nodes changing one key at once both keep their change; a revocation made apart wins at the next start", async () => {
  const a = await node("e2b_admin_a_0000000000");
  const b = await node("e2b_admin_b_0000000000");
  const team = a.store.createTeam("race");
  const key = a.store.addKey("e2b_race_key_000000001", { teamId: team.teamId, name: "before", role: "member" });
  await until(() => b.store.verify("e2b_race_key_000000001") !== undefined);
  const onB = b.store.keyByPublicId(key.publicId)!;
  // At once: neither write has reached the other node when the other changes the key.
  a.store.renameKey(key.id, "renamed on a");
  b.store.revokeKey(onB.id);
  await Promise.all([a.sync.flush(), b.sync.flush()]);
  const record = decodeKey((await kv.keys.get(key.publicId))!.value);
  expect([record.name, record.revokedAt !== null]).toEqual(["renamed on a", true]);
  await until(() => a.store.verify("e2b_race_key_000000001") === undefined && b.store.keyByPublicId(key.publicId)?.name === "renamed on a");

  // A third node revokes a key of its own while the buckets still say it is live: its start's push makes it revoked.
  const c = await node("e2b_admin_c_0000000000");
  const late = c.store.addKey("e2b_late_key_000000001", { teamId: team.teamId, name: "late", role: "member" });
  await c.sync.flush();
  await until(() => a.store.verify("e2b_late_key_000000001") !== undefined);
  c.sync.close();
  c.store.revokeKey(late.id); // no sync listening: as if done while apart
  expect(decodeKey((await kv.keys.get(late.publicId))!.value).revokedAt).toBeNull();
  const restarted = await TeamSync.start({ teams: kv.teams, keys: kv.keys, store: c.store, defaultTeamId: c.defaultTeamId, logger });
  undo.push(() => restarted.close());
  expect(decodeKey((await kv.keys.get(late.publicId))!.value).revokedAt).not.toBeNull();
  await until(() => a.store.verify("e2b_late_key_000000001") === undefined);
});
