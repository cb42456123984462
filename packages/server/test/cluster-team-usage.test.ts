// Owner records' facts and a team's usage across nodes, on a real nats-server with JetStream: a node writes its
// sandboxes' team, vCPUs, memory and pause into their records (owner-facts.ts) from their lifecycle events and at
// start; another node sums the running, unpaused, not lost records of other nodes per team (team-usage.ts), and the
// disk of paused ones too, its own left out (its store counts them), the default team under null. Records without
// facts count for nobody.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { followOwnerFacts } from "../src/cluster/owner-facts.js";
import { OWNER_RECORD_VERSION, SandboxOwners, type OwnerFacts } from "../src/cluster/sandbox-owners.js";
import { teamUsageElsewhere } from "../src/cluster/team-usage.js";
import { SandboxEvents } from "../src/lifecycle/events.js";

const logger = pino({ level: "silent" });

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("team usage across nodes from owner records", () => {
  let nats: NatsServerFixture;
  const conns: ClusterKv[] = [];

  beforeAll(async () => {
    nats = await NatsServerFixture.start();
  });
  afterAll(async () => {
    for (const c of conns) await c.close();
    await nats?.stop();
  });

  it("writes facts from events and at start, and sums other nodes' running sandboxes per team", async () => {
    const kvA = await openClusterKv([`nats://${nats.url}`], "a", 1);
    const kvB = await openClusterKv([`nats://${nats.url}`], "b", 1);
    conns.push(kvA, kvB);
    const ownersA = await SandboxOwners.open(kvA, "a", logger);
    const ownersB = await SandboxOwners.open(kvB, "b", logger);
    try {
      // Node A's sandboxes as its store would say.
      const facts = new Map<string, OwnerFacts>([
        ["sbxold", { teamId: "team-1", vcpu: 2, memoryMB: 512, paused: false, diskMB: 1024 }],
        ["sbxnew", { teamId: "team-1", vcpu: 4, memoryMB: 1024, paused: false, diskMB: 2048 }],
        ["sbxdef", { teamId: null, vcpu: 1, memoryMB: 256, paused: false, diskMB: 512 }],
      ]);
      await ownersA.claim("sbxold", "base");
      const events = new SandboxEvents(logger);
      const stop = followOwnerFacts({ owners: ownersA, events, facts: (id) => facts.get(id), localIds: () => ["sbxold"], logger });
      // A sandbox B has: never counted by B as "elsewhere"; a record without facts: counted for nobody.
      await ownersB.claim("sbxb", "base");
      await ownersA.claim("sbxbare", "base");

      for (const id of ["sbxnew", "sbxdef"]) {
        await ownersA.claim(id, "base");
        events.emit({ type: "created", sandboxId: id, templateId: "base", metadata: {}, timestamp: new Date() });
      }
      const usage = () => teamUsageElsewhere(ownersB, "b");
      await until(() => usage().get("team-1")?.runningSandboxes === 2 && usage().get(null)?.runningSandboxes === 1);
      expect(usage().get("team-1")).toEqual({ runningSandboxes: 2, vcpu: 6, memoryMB: 1536, diskMB: 3072 });
      expect(usage().get(null)).toEqual({ runningSandboxes: 1, vcpu: 1, memoryMB: 256, diskMB: 512 });
      expect([...usage().keys()].sort((x, y) => String(x).localeCompare(String(y)))).toEqual([null, "team-1"]);
      expect((await ownersA.read("sbxnew"))?.record).toMatchObject({ v: OWNER_RECORD_VERSION, node: "a", templateId: "base", teamId: "team-1", vcpu: 4, memoryMB: 1024, paused: false, diskMB: 2048 });
      // B's own sandbox is B's store's to count.
      expect(teamUsageElsewhere(ownersA, "a").size).toBe(0);

      // Paused: not running, its disk still held.
      facts.set("sbxnew", { ...facts.get("sbxnew")!, paused: true });
      events.emit({ type: "paused", sandboxId: "sbxnew", templateId: "base", metadata: {}, timestamp: new Date() });
      await until(() => usage().get("team-1")?.runningSandboxes === 1);
      expect(usage().get("team-1")).toEqual({ runningSandboxes: 1, vcpu: 2, memoryMB: 512, diskMB: 3072 });

      // Marked lost (as lost-sweep.ts does): released.
      const stored = (await ownersB.read("sbxold"))!;
      expect(await ownersB.replace("sbxold", { ...stored.record, lostAt: new Date().toISOString() }, stored.revision)).toBe(true);
      await until(() => usage().get("team-1")?.runningSandboxes === 0);
      expect(usage().get("team-1")).toEqual({ runningSandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: 2048 });
      // A lost record is not rewritten by its facts (the owner takes it back first).
      facts.set("sbxold", { ...facts.get("sbxold")!, vcpu: 8 });
      events.emit({ type: "resumed", sandboxId: "sbxold", templateId: "base", metadata: {}, timestamp: new Date() });
      await new Promise((r) => setTimeout(r, 300));
      expect((await ownersA.read("sbxold"))?.record.vcpu).toBe(2);
      stop();
    } finally {
      ownersA.close();
      ownersB.close();
    }
  });
});
