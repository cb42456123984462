// Where each checkpoint is (cluster/checkpoint-records.ts) on a real nats-server: a node records what it takes, any
// node reads it, only the holder's delete removes it, and ids that are no KV key are neither recorded nor looked up.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { CheckpointRecords } from "../src/cluster/checkpoint-records.js";

const logger = pino({ level: "silent" });

describe("checkpoint records", () => {
  let nats: NatsServerFixture;
  let n1: CheckpointRecords;
  let n2: CheckpointRecords;
  beforeAll(async () => {
    nats = await NatsServerFixture.start();
    const open = (nodeName: string) => CheckpointRecords.open({ servers: [nats.url], nodeName, replicas: 1, logger });
    [n1, n2] = await Promise.all([open("n1"), open("n2")]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([n1?.close(), n2?.close()]);
    await nats?.stop();
  });

  it("are read by every node and removed by the holder's delete only", async () => {
    await n1.taken("cp1abc", "sbx1", "team-a");
    await n1.taken("cp2abc", "sbx1", null);
    expect(await n2.lookup("cp1abc")).toEqual({ v: 1, node: "n1", sandboxId: "sbx1", teamId: "team-a" });
    expect(await n2.lookup("cp2abc")).toMatchObject({ node: "n1", teamId: null });
    await n2.deleted("cp1abc");
    expect(await n1.lookup("cp1abc")).toMatchObject({ node: "n1" });
    await n1.deleted("cp1abc");
    expect(await n2.lookup("cp1abc")).toBeUndefined();
    expect(await n2.lookup("nosuch")).toBeUndefined();
  });

  it("leave ids that are no KV key alone", async () => {
    await n1.taken("a.b", "sbx", null);
    await n1.taken("*", "sbx", null);
    expect(await n2.lookup("a.b")).toBeUndefined();
    expect(await n2.lookup("..")).toBeUndefined();
  });
});
