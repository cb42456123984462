// What placement adds to a node's record (cluster/recent-creates.ts), on a real nats-server with JetStream: sandboxes
// a node made less those that ended since its record, seen on the buckets' subjects as other nodes write them.
import { afterAll, beforeAll, expect, it } from "vitest";
import { pino } from "pino";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { RecentCreates } from "../src/cluster/recent-creates.js";

const logger = pino({ level: "silent" });
let nats: NatsServerFixture;
let writer: ClusterKv;
let reader: ClusterKv;

beforeAll(async () => {
  nats = await NatsServerFixture.start();
  writer = await openClusterKv([`nats://${nats.url}`], "writer", 1);
  reader = await openClusterKv([`nats://${nats.url}`], "reader", 1);
});
afterAll(async () => {
  await writer?.close();
  await reader?.close();
  await nats?.stop();
});

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

it("counts a node's creates and ends since its record; lost marks and rewrites are no creates", async () => {
  const recent = RecentCreates.open(reader.nc, logger);
  // The subscriptions are in place at the server once a round trip after them has come back; the writes below are
  // on another connection and could otherwise arrive first (seen under heavy load).
  await reader.nc.flush();
  try {
    await writer.owners.create("sbx1", json({ v: 1, node: "b", claimedAt: "" }));
    const rev2 = await writer.owners.create("sbx2", json({ v: 1, node: "b", claimedAt: "" }));
    await writer.owners.create("sbx3", json({ v: 1, node: "c", claimedAt: "" }));
    await until(() => recent.since("b") === 2 && recent.since("c") === 1);
    // A rewrite of a known sandbox (a node taking it back) and a lost mark are not new sandboxes.
    await writer.owners.update("sbx2", json({ v: 2, node: "b", claimedAt: "x" }), rev2);
    await writer.owners.put("sbx3", json({ v: 2, node: "c", claimedAt: "", lostAt: "2026-12-05T00:00:00Z" }));
    // Node b's record: what it made before is in it now.
    await writer.nodes.put("b", json({ v: 2, name: "b", apiUrl: "http://127.0.0.1:1" }));
    await until(() => recent.since("b") === 0);
    expect(recent.since("c")).toBe(1);
    // Ended since the record: counted off.
    const entry = await writer.owners.get("sbx1");
    await writer.owners.delete("sbx1", { previousSeq: entry!.revision });
    await until(() => recent.since("b") === -1);
    await writer.owners.create("sbx4", json({ v: 1, node: "b", claimedAt: "" }));
    await until(() => recent.since("b") === 0);
    expect(recent.since("nobody")).toBe(0);
  } finally {
    recent.close();
  }
});
