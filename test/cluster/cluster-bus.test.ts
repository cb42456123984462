// One bus for the whole cluster: two Burrow nodes (the real CLI, own state directories and subnets, no --bus) on a
// 3-server NATS JetStream cluster on the loopback share the cluster's NATS as their bus. A message published through
// A reaches a subscriber on B; a queue message enqueued through A is delivered once, through B; a trigger rule made
// through A runs once per event with both nodes running it (events of a sandbox on B, each run in a fresh sandbox
// placed like any create); and a checkpoint taken through A of a sandbox on B is read, branched and deleted through A
// (cluster/checkpoint-records.ts routes /burrow/v1/checkpoints/{id} to the node holding it).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { NatsCluster } from "./nats-cluster.js";
import { LifecycleEvents, SseMessages, until } from "./lifecycle-events.js";
import { clusterSigning } from "./forward-pin.js";
import type { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { keyedApi } from "../helpers/keyed-api.js";
import { stopServerProcess } from "../helpers/server-process.js";
import { cliNodes, nodeUrl as url, startCliNodes, waitForNodesUp, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;

/** The messages of a node's bus subscribe route, collected until stopped. */
function subscribe(url: string, subject: string) {
  return new SseMessages<{ subject: string; data?: string }>(`${url}/burrow/v1/bus/subscribe?subject=${encodeURIComponent(subject)}`, API_KEY, "subscribe");
}

describe("one bus for the whole cluster", () => {
  let nats: NatsCluster;
  let signing: ForwardSigning;
  const nodes = cliNodes("cb", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const api = (node: Node) => keyedApi(url(node), API_KEY);
  const made = new Set<string>();
  const triggers: string[] = [];

  /** A new team's admin key, once both nodes know it. */
  const newTeamKey = async () => {
    const team = (await api(a)("POST", "/burrow/v1/teams", { name: `bus-${randomBytes(3).toString("hex")}` })).json as { teamID: string; adminKey: { key: string } };
    await until("B knows the team's key", async () => (await keyedApi(url(b), team.adminKey.key)("GET", `/burrow/v1/teams/${team.teamID}`)).status === 200);
    return team.adminKey.key;
  };

  /** A sandbox made on `node` itself (signed as a node would sign a placed create). */
  const createOn = async (node: Node, key = API_KEY) => {
    const headers = { "X-API-Key": key, "content-type": "application/json", ...signing.headers("POST", "/sandboxes", node.name) };
    const res = await fetch(`${url(node)}/sandboxes`, { method: "POST", headers, body: JSON.stringify({ templateID: "base", timeout: 300 }) });
    const json = (await res.json()) as { sandboxID?: string; message?: string };
    expect(res.status, json.message).toBe(201);
    made.add(json.sandboxID!);
    return json.sandboxID!;
  };

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    // No bus named (BURROW_BUS empty): the nodes take the cluster's NATS, which is what this suite is about.
    await startCliNodes(nodes, nats.urls, { apiKey: API_KEY, downAfterMs: 8000, env: { BURROW_BUS: "" } });
    await waitForNodesUp(nodes, API_KEY);
    signing = await clusterSigning(nats.urls);
  }, 600_000);

  afterAll(async () => {
    const cleanUp = async () => {
      for (const id of triggers) await api(a)("DELETE", `/burrow/v1/triggers/${id}`).catch(() => undefined);
      await Promise.allSettled([...made].map((id) => fetch(`${url(a)}/sandboxes/${id}`, { method: "DELETE", headers: { "X-API-Key": API_KEY } })));
    };
    await tearDownServers(nodes, { before: [cleanUp], after: [() => nats?.stop()] });
  }, 300_000);

  it("the bus's streams and buckets are kept on every NATS server (one lost loses nothing)", { timeout: 60_000 }, async () => {
    const nc = await connect({ servers: nats.urls });
    try {
      const jsm = await jetstreamManager(nc);
      for (const stream of ["BURROW_DLQ", "BURROW_SANDBOX_EVENTS", "QUEUE_tasks", "KV_burrow_triggers", "KV_burrow_tasks"]) {
        expect((await jsm.streams.info(stream)).config.num_replicas, stream).toBe(3);
      }
    } finally {
      await nc.close();
    }
  });

  it("a message published through A reaches a subscriber on B", { timeout: 60_000 }, async () => {
    const sub = subscribe(url(b), "agents.h27.>");
    try {
      await sub.ready;
      const sent = await api(a)("POST", "/burrow/v1/bus/publish", { subject: "agents.h27.hello", data: "from A" });
      expect(sent.status).toBe(202);
      await until("B's subscriber hears A's message", () => sub.seen.length > 0, 10_000);
      expect(sub.seen).toEqual([expect.objectContaining({ subject: "agents.h27.hello", data: "from A" })]);
    } finally {
      sub.stop();
    }
  });

  it("each node's lifecycle stream has the whole cluster's events, for the sandbox's team only", { timeout: 120_000 }, async () => {
    const [mine, other] = [await newTeamKey(), await newTeamKey()];
    const streams = [new LifecycleEvents(url(a), mine), new LifecycleEvents(url(a), other)] as const;
    try {
      await Promise.all(streams.map((s) => s.ready));
      const sandboxId = await createOn(b, mine);
      await until("A streams B's created event to the sandbox's team", () => streams[0].of("created", sandboxId) === 1, 15_000);
      expect((await fetch(`${url(b)}/sandboxes/${sandboxId}`, { method: "DELETE", headers: { "X-API-Key": mine } })).status).toBe(204);
      made.delete(sandboxId);
      await until("A streams B's killed event to the sandbox's team", () => streams[0].of("killed", sandboxId) === 1, 15_000);
      expect(streams[1].seen.filter((e) => e.sandboxID === sandboxId)).toEqual([]);
    } finally {
      for (const s of streams) s.stop();
    }
  });

  it("a queue message enqueued through A is delivered once, through B", { timeout: 60_000 }, async () => {
    const queue = `h27q${randomBytes(3).toString("hex")}`;
    const sent = await api(a)("POST", `/burrow/v1/queues/${queue}/messages`, { data: "job 1" });
    expect(sent.status).toBe(201);
    const got = await api(b)("POST", `/burrow/v1/queues/${queue}/consume`, { timeoutMs: 5000 });
    expect(got.status).toBe(200);
    const message = got.json as { receipt: string; data: string };
    expect(message.data).toBe("job 1");
    // Held by B: neither node delivers it again (nor after B acknowledges it).
    for (const node of [a, b]) expect((await api(node)("POST", `/burrow/v1/queues/${queue}/consume`, { timeoutMs: 1000 })).status).toBe(204);
    expect((await api(b)("POST", `/burrow/v1/queues/${queue}/messages/${message.receipt}/ack`)).status).toBeLessThan(300);
    for (const node of [a, b]) expect((await api(node)("POST", `/burrow/v1/queues/${queue}/consume`, { timeoutMs: 1000 })).status).toBe(204);
  });

  it("a checkpoint taken through A of a sandbox on B is read, branched and deleted through A", { timeout: 300_000 }, async () => {
    const sandboxId = await createOn(b);
    const taken = await api(a)("POST", `/burrow/v1/sandboxes/${sandboxId}/checkpoints`, { label: "h27" });
    expect(taken.status, JSON.stringify(taken.json)).toBe(201);
    const checkpointId = (taken.json as { checkpointID: string }).checkpointID;
    const read = await api(a)("GET", `/burrow/v1/checkpoints/${checkpointId}`);
    expect(read.status, JSON.stringify(read.json)).toBe(200);
    expect(read.json).toMatchObject({ checkpointID: checkpointId, sandboxID: sandboxId });
    const branched = await api(a)("POST", `/burrow/v1/checkpoints/${checkpointId}/branch`, { count: 1, timeout: 120 });
    expect(branched.status, JSON.stringify(branched.json)).toBe(201);
    const child = (branched.json as Array<{ sandbox?: { sandboxID: string } }>)[0]?.sandbox?.sandboxID;
    expect(child, JSON.stringify(branched.json)).toBeDefined();
    made.add(child!);
    // The branch is B's (its files are there), and answers through A like any sandbox of B.
    expect((await api(a)("GET", `/sandboxes/${child}`)).status).toBe(200);
    const deleted = await api(a)("DELETE", `/burrow/v1/checkpoints/${checkpointId}`);
    expect(deleted.status, JSON.stringify(deleted.json)).toBe(200);
    expect(deleted.json).toEqual({ deleted: [checkpointId] });
    expect((await api(a)("GET", `/burrow/v1/checkpoints/${checkpointId}`)).status).toBe(404);
    expect((await api(b)("GET", `/burrow/v1/checkpoints/${checkpointId}`)).status).toBe(404);
  });

  it("a trigger rule made through A runs once per event with both nodes running it", { timeout: 300_000 }, async () => {
    const sandboxId = await createOn(b);
    const ruleId = `h27-${randomBytes(3).toString("hex")}`;
    const created = await api(a)("POST", "/burrow/v1/triggers", {
      id: ruleId,
      on: { sandboxId, category: "lifecycle", type: "checkpoint_created" },
      in: { template: "base" },
      cmd: "echo fired for {{sandboxId}}",
      keepSandbox: true,
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    triggers.push(ruleId);
    // B reads the rules every 2 s: give it time to run this one too.
    await new Promise((r) => setTimeout(r, 5000));
    const events = 3;
    for (let i = 0; i < events; i++) expect((await api(b)("POST", `/burrow/v1/sandboxes/${sandboxId}/checkpoints`, { label: `t${i}` })).status).toBe(201);
    type Run = { state: string; result?: { sandboxId?: string; stdout?: string } };
    const runsOf = async (node: Node) => (await api(node)("GET", `/burrow/v1/triggers/${ruleId}/runs`)).json as Run[];
    await until("every event's run finished", async () => {
      const runs = await runsOf(a);
      return runs.length >= events && runs.every((r) => r.state === "succeeded" || r.state === "dead");
    }, 180_000);
    // Let a duplicate (a second node firing for the same event) show up if there were one.
    await new Promise((r) => setTimeout(r, 3000));
    for (const node of [a, b]) {
      const runs = await runsOf(node);
      expect(runs.map((r) => [r.state, r.result?.stdout]), `runs through ${node.name}`).toEqual(Array.from({ length: events }, () => ["succeeded", `fired for ${sandboxId}\n`]));
    }
    const fresh = new Set((await runsOf(a)).map((r) => r.result?.sandboxId));
    for (const id of fresh) if (id) made.add(id);
    expect(fresh.size).toBe(events);
    // The sandboxes it made, and no others: the cluster's list (every node's) has exactly those with the runner's mark.
    const freshListed = async () => ((await api(a)("GET", `/v2/sandboxes?metadata=${encodeURIComponent("burrow.runner=fresh")}`)).json as Array<{ sandboxID: string }>).map((s) => s.sandboxID).sort();
    expect(await freshListed()).toEqual([...fresh].sort());

    // Deleted through B, the rule stops on A too (A reads the rules again): a later event makes no run anywhere.
    expect((await api(b)("DELETE", `/burrow/v1/triggers/${ruleId}`)).status).toBe(204);
    await new Promise((r) => setTimeout(r, 5000));
    expect((await api(b)("POST", `/burrow/v1/sandboxes/${sandboxId}/checkpoints`, { label: "after" })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 10_000));
    const after = await freshListed();
    for (const id of after) made.add(id);
    expect(after).toEqual([...fresh].sort());
  });

  // Last: B stays down (its sandboxes are ended by the teardown's `burrow down`).
  it("a checkpoint of a node that is down is answered 503 naming the node", { timeout: 120_000 }, async () => {
    const sandboxId = await createOn(b);
    const taken = await api(a)("POST", `/burrow/v1/sandboxes/${sandboxId}/checkpoints`, {});
    expect(taken.status, JSON.stringify(taken.json)).toBe(201);
    const checkpointId = (taken.json as { checkpointID: string }).checkpointID;
    await stopServerProcess(b.server!, "SIGKILL");
    await until("A sees B down", async () => {
      const seen = ((await api(a)("GET", "/burrow/v1/nodes")).json as { nodes: Array<{ name: string; status: string }> }).nodes;
      return seen.some((n) => n.name === b.name && n.status === "down");
    }, 60_000);
    const read = await api(a)("GET", `/burrow/v1/checkpoints/${checkpointId}`);
    expect(read).toEqual({ status: 503, json: { code: 503, message: `checkpoint ${checkpointId} is on node node-b, which is down: retry once it is back` } });
  });
});
