// Checked writes (cluster-kv.ts) on a real 3-server nats-server cluster with a replicated bucket: two writers, each
// connected to its own server, race one key over and over, and at most one wins each race. On nats-server before
// 2.9.21 the KV's own per-key revision check lets both win now and then (nats-io/nats-server#4320): the first test
// shows that this harness catches it there, so that the others would fail with the per-key check.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Kvm, type KV } from "@nats-io/kv";
import { NatsCluster } from "../../../test/cluster/nats-cluster.js";
import { ABSENT, checkedCreate, checkedDelete, checkedPut, checkedUpdate, openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { isRevisionConflict } from "../src/cluster/cluster-errors.js";

const ROUNDS = 40;
const value = (n: number) => new TextEncoder().encode(`v${n}`);

/** Whether the server is older than 2.9.21, whose per-key check is not atomic on a replicated stream. */
function perKeyCheckBroken(version: string): boolean {
  const [major, minor, patch] = version.split(".").map((p) => Number.parseInt(p, 10)) as [number, number, number];
  return major === 2 && (minor < 9 || (minor === 9 && patch < 21));
}

interface Outcome {
  /** Rounds where both writers were told they won. */
  doubles: number;
  /** Rounds where neither won (never expected: one of two always wins). */
  nones: number;
}

/** `rounds` races: `setup` prepares a key (returning what both writers expect), then both write it at once. */
async function race(rounds: number, prefix: string, setup: (key: string) => Promise<number>, write: (side: 0 | 1, key: string, expected: number) => Promise<unknown>): Promise<Outcome> {
  const outcome: Outcome = { doubles: 0, nones: 0 };
  for (let i = 0; i < rounds; i++) {
    const key = `${prefix}${i}`;
    const expected = await setup(key);
    const results = await Promise.allSettled([write(0, key, expected), write(1, key, expected)]);
    for (const r of results) if (r.status === "rejected" && !isRevisionConflict(r.reason)) throw r.reason;
    const wins = results.filter((r) => r.status === "fulfilled").length;
    if (wins === 2) outcome.doubles++;
    if (wins === 0) outcome.nones++;
  }
  return outcome;
}

describe("checked writes on a 3-server cluster (replicated bucket)", () => {
  let cluster: NatsCluster;
  let a: ClusterKv;
  let b: ClusterKv;
  let writer: [KV, KV];

  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    a = await openClusterKv([cluster.urls[0]!], "a", 3);
    b = await openClusterKv([cluster.urls[1]!], "b", 3);
    writer = [a.owners, b.owners];
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await cluster?.stop();
  });

  it("the KV's own revision check lets two updates naming one revision both win on nats-server < 2.9.21", { timeout: 120_000 }, async () => {
    const version = a.nc.info?.version ?? "";
    if (!perKeyCheckBroken(version)) return;
    const out = await race(100, "lib-upd-", (k) => a.owners.create(k, value(0)), (side, k, rev) => writer[side].update(k, value(side + 1), rev));
    expect(out.doubles, `nats-server ${version}`).toBeGreaterThan(0);
  });

  it("a checked update: of two writers naming one revision, exactly one wins", { timeout: 120_000 }, async () => {
    const out = await race(ROUNDS, "upd-", (k) => a.owners.create(k, value(0)), (side, k, rev) => checkedPut(writer[side], k, value(side + 1), rev));
    expect(out).toEqual({ doubles: 0, nones: 0 });
  });

  it("a checked create of a key another deleted: exactly one wins", { timeout: 120_000 }, async () => {
    const setup = async (k: string) => {
      await a.owners.create(k, value(0));
      await a.owners.delete(k);
      return ABSENT;
    };
    const out = await race(ROUNDS, "del-crt-", setup, (side, k) => checkedCreate(writer[side], k, value(side + 1)));
    expect(out).toEqual({ doubles: 0, nones: 0 });
  });

  // nats-server 2.9.10 checks an expected subject sequence of 0 when it applies, not before the proposal, so this one
  // holds with the KV's own create too; kept so that a checked create stays one-winner.
  it("a checked create of a new key: exactly one wins", { timeout: 120_000 }, async () => {
    const out = await race(ROUNDS, "crt-", async () => ABSENT, (side, k) => checkedCreate(writer[side], k, value(side + 1)));
    expect(out).toEqual({ doubles: 0, nones: 0 });
  });

  it("a checked delete and a checked update naming one revision: exactly one wins", { timeout: 120_000 }, async () => {
    const write = (side: 0 | 1, k: string, rev: number) => (side === 0 ? checkedDelete(writer[0], k, rev) : checkedPut(writer[1], k, value(2), rev));
    const out = await race(ROUNDS, "del-", (k) => a.owners.create(k, value(0)), write);
    expect(out).toEqual({ doubles: 0, nones: 0 });
    const entry = await a.owners.get("del-0");
    expect(entry?.operation === "DEL" || new TextDecoder().decode(entry?.value) === "v2").toBe(true);
  });

  it("read-modify-writes from two servers at once lose nothing: 2 × 25 increments of one counter make 50", { timeout: 120_000 }, async () => {
    const bump = (kv: KV) => checkedUpdate(kv, "counter", (entry) => value((entry?.operation === "PUT" ? Number(new TextDecoder().decode(entry.value).slice(1)) : 0) + 1));
    await Promise.all([0, 1].map(async (side) => {
      for (let i = 0; i < 25; i++) await bump(writer[side as 0 | 1]);
    }));
    expect(new TextDecoder().decode((await a.owners.get("counter"))?.value)).toBe("v50");
  });

  it("writes of other keys meanwhile make a checked write read again, not fail; a change of its own key is a conflict", { timeout: 120_000 }, async () => {
    let busy = true;
    // Another writer keeps the bucket's sequence moving, as node records and other sandboxes' claims do: a write
    // every 5 ms or so, more than a busy cluster's owner records (a writer with no pause at all starves it: bounded).
    const noise = (async () => {
      for (let n = 0; busy; n++) {
        await b.owners.put(`noise-${n % 8}`, value(n));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    try {
      for (let i = 0; i < 20; i++) {
        const key = `busy-${i}`;
        const rev = await checkedCreate(a.owners, key, value(0));
        const next = await checkedPut(a.owners, key, value(1), rev);
        await expect(checkedPut(a.owners, key, value(2), rev)).rejects.toSatisfy(isRevisionConflict);
        await expect(checkedCreate(a.owners, key, value(3))).rejects.toSatisfy(isRevisionConflict);
        await checkedDelete(a.owners, key, next);
        expect((await a.owners.get(key))?.operation).toBe("DEL");
      }
    } finally {
      busy = false;
      await noise;
    }
  });

  it("a burst of claims of different keys from two connections all succeed, each once", { timeout: 120_000 }, async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
    const results = await Promise.allSettled(keys.flatMap((k, i) => [checkedCreate(writer[i % 2 as 0 | 1], k, value(1)), checkedCreate(writer[(i + 1) % 2 as 0 | 1], k, value(2))]));
    for (const r of results) if (r.status === "rejected" && !isRevisionConflict(r.reason)) throw r.reason;
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(keys.length);
  });

  it("an empty bucket is seeded so that its first checked writes are checked too", { timeout: 120_000 }, async () => {
    const [ka, kb] = [await new Kvm(a.nc).create("burrow_test_empty", { history: 1, replicas: 3, allow_direct: false }), await new Kvm(b.nc).open("burrow_test_empty")];
    try {
      const results = await Promise.allSettled([checkedCreate(ka, "first", value(1)), checkedCreate(kb, "first", value(2))]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      // The seed is a deletion: no key reads as present.
      expect((await ka.get("_seed"))?.operation).toBe("DEL");
    } finally {
      await ka.destroy();
    }
  });
});
