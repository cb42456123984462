// Node loss on a real nats-server with JetStream: the loss marker is taken by exactly one of two contending nodes
// (per incarnation of the lost node, taken over only from a holder that is down), a down node's sandboxes are
// reported lost once by the lowest-named up node (records kept, marked lost; one event each), and the node, back,
// takes back what it still has (a `recovered` event), kills a copy whose id another node owns or that its user killed
// while it was lost, and drops the rest.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { rememberKill } from "../src/cluster/lost-kill.js";
import { finishLossMarker, takeLossMarker } from "../src/cluster/lost-marker.js";
import { LostSweep } from "../src/cluster/lost-sweep.js";
import { Membership } from "../src/cluster/membership.js";
import { reconcileOwnership, type LocalSandbox, type LocalSandboxes } from "../src/cluster/reconcile.js";
import { OWNER_RECORD_VERSION, SandboxOwners } from "../src/cluster/sandbox-owners.js";
import { SandboxEvents, type SandboxLifecycleEvent } from "../src/lifecycle/events.js";

const logger = pino({ level: "silent" });
const load = async () => ({ freeMemoryBytes: 1, runningSandboxes: 0, poolFill: [] });

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A node's own sandboxes as the server keeps them (its store's rows), and the kills asked of it. */
class Local implements LocalSandboxes {
  readonly killed: string[] = [];
  readonly #rows = new Map<string, LocalSandbox>();

  constructor(ids: string[]) {
    for (const sandboxId of ids) this.#rows.set(sandboxId, { sandboxId, templateId: "base", metadata: { who: sandboxId } });
  }

  get(sandboxId: string): LocalSandbox | undefined {
    return this.#rows.get(sandboxId);
  }

  async kill(sandboxId: string): Promise<void> {
    this.killed.push(sandboxId);
    this.#rows.delete(sandboxId);
  }
}

function recorded(events: SandboxEvents): SandboxLifecycleEvent[] {
  const seen: SandboxLifecycleEvent[] = [];
  events.subscribe((e) => seen.push(e));
  return seen;
}

describe("node loss in JetStream KV", () => {
  let nats: NatsServerFixture;
  const conns: ClusterKv[] = [];
  const closers: Array<() => unknown> = [];

  beforeAll(async () => {
    nats = await NatsServerFixture.start();
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    for (const c of conns) await c.close();
    await nats?.stop();
  });

  async function connection(name: string): Promise<ClusterKv> {
    const kv = await openClusterKv([`nats://${nats.url}`], name, 1);
    conns.push(kv);
    return kv;
  }

  it("the loss marker of an incarnation is taken by one of two contending nodes, and taken over only from a down holder", async () => {
    const [kvA, kvB] = [await connection("ma"), await connection("mb")];
    const up = () => true;
    for (let i = 0; i < 20; i++) {
      const node = `gone${i}`;
      const both = await Promise.all([
        takeLossMarker(kvA.losses, { node, incarnation: "t1", me: "ma", isUp: up }),
        takeLossMarker(kvB.losses, { node, incarnation: "t1", me: "mb", isUp: up }),
      ]);
      const taken = both.filter((t) => typeof t !== "string");
      expect(taken, `round ${i}`).toHaveLength(1);
      expect(both.filter((t) => t === "held")).toHaveLength(1);
      expect(await finishLossMarker(i % 2 ? kvA.losses : kvB.losses, taken[0]!)).toBe(true);
      expect(await takeLossMarker(kvA.losses, { node, incarnation: "t1", me: "ma", isUp: up })).toBe("done");
    }
    // The node came back and went down again: its new incarnation is reported again, once.
    const again = await Promise.all([
      takeLossMarker(kvA.losses, { node: "gone0", incarnation: "t2", me: "ma", isUp: up }),
      takeLossMarker(kvB.losses, { node: "gone0", incarnation: "t2", me: "mb", isUp: up }),
    ]);
    expect(again.filter((t) => typeof t !== "string")).toHaveLength(1);

    // Held unfinished by mb: left to it while it is up, taken over once it is down.
    const held = await takeLossMarker(kvB.losses, { node: "gone-x", incarnation: "t1", me: "mb", isUp: up });
    expect(typeof held).toBe("object");
    expect(await takeLossMarker(kvA.losses, { node: "gone-x", incarnation: "t1", me: "ma", isUp: up })).toBe("held");
    const over = await takeLossMarker(kvA.losses, { node: "gone-x", incarnation: "t1", me: "ma", isUp: (n) => n !== "mb" });
    expect(over).toMatchObject({ marker: { takenBy: "ma", done: false } });
    // mb's late finish does not count: the marker is ma's now.
    expect(await finishLossMarker(kvB.losses, held as Exclude<typeof held, string>)).toBe(false);
  });

  it("a down node's sandboxes are reported lost once; back, the node takes back what it has, kills a copy another node owns, drops the rest", async () => {
    const [kvA, kvB, kvC] = [await connection("na"), await connection("nb"), await connection("nc")];
    const opts = { version: "0.1.0", heartbeatMs: 100, downAfterMs: 600, load, logger };
    const nodeOf = async (name: string, kv: ClusterKv) => {
      const membership = await Membership.open({ ...opts, kv: kv.nodes, nodeName: name });
      const owners = await SandboxOwners.open(kv, name, logger);
      closers.push(() => membership.close(), () => owners.close());
      await membership.join(`http://127.0.0.1:${name.charCodeAt(1)}`);
      return { membership, owners };
    };
    const a = await nodeOf("na", kvA);
    const b = await nodeOf("nb", kvB);
    const c = await nodeOf("nc", kvC);
    await c.owners.claim("lost1", "base");
    await c.owners.claim("lost2", "base");
    await c.owners.claim("lost3", "base");
    await a.owners.claim("mine1", "base");

    const sweeps = [
      { name: "na", kv: kvA, ...a },
      { name: "nb", kv: kvB, ...b },
    ].map((n) => {
      const events = new SandboxEvents(logger);
      const seen = recorded(events);
      const sweep = new LostSweep({ membership: n.membership, owners: n.owners, losses: n.kv.losses, events, local: new Local([]), logger, intervalMs: 100 });
      closers.push(() => sweep.close());
      return { name: n.name, seen };
    });
    await until(() => a.membership.list().filter((n) => n.status === "up").length === 3);

    // nc stops beating (as a SIGKILL would): after the window na, the lowest-named up node, reports its sandboxes.
    await c.membership.close();
    await until(() => sweeps[0]!.seen.length === 3, 5_000);
    await new Promise((r) => setTimeout(r, 800));
    expect(sweeps[0]!.seen.map((e) => [e.type, e.sandboxId, e.templateId]).sort()).toEqual([
      ["lost", "lost1", "base"],
      ["lost", "lost2", "base"],
      ["lost", "lost3", "base"],
    ]);
    expect(sweeps[1]!.seen).toEqual([]);
    for (const id of ["lost1", "lost2", "lost3"]) {
      const stored = await a.owners.read(id);
      expect(stored?.record).toMatchObject({ node: "nc", v: OWNER_RECORD_VERSION, lostAt: expect.any(String) });
    }
    expect((await a.owners.read("mine1"))?.record.lostAt).toBeUndefined();
    // A request through another node finds the lost record in its mirror (the forwarder answers it not found).
    await until(() => b.owners.cachedRecord("lost1")?.lostAt !== undefined);
    // Its user kills lost3 meanwhile (through nb): the kill is kept on the record, once.
    expect(await rememberKill(b.owners, "lost3", logger)).toBe(true);
    expect(await rememberKill(b.owners, "lost3", logger)).toBe(true);
    expect((await a.owners.read("lost3"))?.record).toMatchObject({ lostAt: expect.any(String), killedAt: expect.any(String) });
    expect(await rememberKill(b.owners, "mine1", logger)).toBe(false);

    // nc back: it still has lost1 and lost3, not lost2, and has a copy of mine1, which na owns.
    const back = await nodeOf("nc", kvC);
    const events = new SandboxEvents(logger);
    const seen = recorded(events);
    const local = new Local(["lost1", "lost3", "mine1"]);
    const outcomes = await reconcileOwnership({ owners: back.owners, nodeName: "nc", local, events, logger }, ["lost1", "lost3", "mine1"]);
    expect(Object.fromEntries(outcomes)).toEqual({ lost1: "recovered", lost3: "killed", mine1: "killed" });
    expect(seen.map((e) => [e.type, e.sandboxId, e.metadata])).toEqual([["recovered", "lost1", { who: "lost1" }]]);
    expect(local.killed).toEqual(["lost3", "mine1"]);
    expect(await back.owners.read("lost3")).toBeUndefined();
    const recovered = await back.owners.read("lost1");
    expect(recovered?.record).toMatchObject({ node: "nc", templateId: "base" });
    expect(recovered?.record).not.toHaveProperty("lostAt");
    expect(await back.owners.read("lost2")).toBeUndefined();
    expect((await back.owners.read("mine1"))?.record.node).toBe("na");
    // Reconciling again changes nothing and sends nothing.
    expect(Object.fromEntries(await reconcileOwnership({ owners: back.owners, nodeName: "nc", local, events, logger }, ["lost1"]))).toEqual({ lost1: "kept" });
    expect(seen).toHaveLength(1);
    // The surviving nodes send no more reports for nc's sandboxes.
    await new Promise((r) => setTimeout(r, 500));
    expect(sweeps[0]!.seen).toHaveLength(3);
    expect(sweeps[1]!.seen).toEqual([]);

    // Judged lost while it still has the sandbox (a report made as it came back): nc's own sweep takes it back.
    const sweep = new LostSweep({ membership: back.membership, owners: back.owners, losses: kvC.losses, events, local, logger, intervalMs: 100 });
    closers.push(() => sweep.close());
    const current = await back.owners.read("lost1");
    expect(await back.owners.replace("lost1", { ...current!.record, lostAt: new Date().toISOString() }, current!.revision)).toBe(true);
    await until(() => seen.length === 2);
    expect(seen[1]).toMatchObject({ type: "recovered", sandboxId: "lost1" });
    await until(async () => (await back.owners.read("lost1"))?.record.lostAt === undefined);
  });
});
