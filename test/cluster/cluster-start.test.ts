// A node started while its NATS cluster cannot answer yet (one of three servers up: JetStream has no quorum, so no
// leader, and its requests time out) waits for it instead of failing: once the other servers come, the buckets are
// made and the node's record is written. Seen in CI as "join as node node-b: the cluster's NATS servers are
// unreachable (timeout)" when two nodes made the replicated buckets at once on a loaded machine.
import { afterAll, expect, it } from "vitest";
import { pino } from "pino";
import { NatsCluster } from "./nats-cluster.js";
import { openClusterKv, type ClusterKv } from "../../packages/server/src/cluster/cluster-kv.js";
import { Membership } from "../../packages/server/src/cluster/membership.js";

const logger = pino({ level: "silent" });
let nats: NatsCluster | undefined;
let kv: ClusterKv | undefined;
let membership: Membership | undefined;

afterAll(async () => {
  await membership?.close();
  await kv?.close();
  await nats?.stop();
});

it("opens the buckets and joins once a cluster without quorum gets it, however long past one request's timeout", async () => {
  nats = await NatsCluster.start(3, 1);
  const opening = openClusterKv([nats.urls[0]!], "early", 3, logger);
  let settled = false;
  void opening.then(
    () => (settled = true),
    () => (settled = true),
  );
  // Longer than a JetStream request's timeout (5 s): a node that did not retry has failed by now.
  await new Promise((r) => setTimeout(r, 7_000));
  expect(settled).toBe(false);

  await nats.launchRest();
  kv = await opening;
  membership = await Membership.open({ kv: kv.nodes, nodeName: "early", version: "0.0.0", heartbeatMs: 500, downAfterMs: 5_000, load: async () => ({ freeMemoryBytes: 1, runningSandboxes: 0, poolFill: [] }), logger });
  await membership.join("http://127.0.0.1:1");
  expect(membership.node("early") ?? (await kv.nodes.get("early"))?.string()).toBeTruthy();
  expect((await kv.nodes.status()).replicas).toBe(3);
}, 60_000);
