// Trust and teams across two Burrow nodes (the real CLI, own state directories and subnets) on a 3-server NATS
// JetStream cluster on the loopback, with the official e2b SDK. A client's `X-Burrow-Forwarded-By` (unsigned, or
// signed for another request) no longer pins a create to the node it reached: placement happens; a mark signed with
// the cluster's key, as nodes send them, is still honoured. A team limited to 2 running sandboxes has one on each
// node: its third create is refused (429 naming the quota and the usage) through either node. Node B SIGKILLed: the
// `lost` event of its sandbox reaches the team's lifecycle stream on A (not another team's), the lost sandbox stops
// counting, and a create succeeds again; a killed sandbox frees its place too.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { NatsCluster } from "./nats-cluster.js";
import { LifecycleEvents, until } from "./lifecycle-events.js";
import { clusterSigning } from "./forward-pin.js";
import type { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { keyedApi } from "../helpers/keyed-api.js";
import { stopServerProcess } from "../helpers/server-process.js";
import { cliNodes, cordonNode, createTeam, nodesSeenBy, nodeUrl as url, readOwnerRecord, sdkOptions, startCliNodes, waitForNodesUp, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const DOWN_AFTER_MS = 4_000;

describe("forwarded marks, team quotas and lost events across two nodes", () => {
  let nats: NatsCluster;
  let signing: ForwardSigning;
  const nodes = cliNodes("tm", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const opts = (node: Node, apiKey = API_KEY) => sdkOptions(node, apiKey);
  const made = new Set<string>();

  const ownerOf = (sandboxId: string) => readOwnerRecord(nats.urls, sandboxId);
  const cordon = (node: Node, what: "cordon" | "uncordon", via: Node) => cordonNode(via, node.name, what, API_KEY);
  const knowsCordon = async (node: Node, cordoned: boolean) => (await nodesSeenBy(node, API_KEY)).find((n) => n.name === node.name)?.cordoned === cordoned;

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    await startCliNodes(nodes, nats.urls, { apiKey: API_KEY, downAfterMs: DOWN_AFTER_MS });
    await waitForNodesUp(nodes, API_KEY);
    signing = await clusterSigning(nats.urls);
  }, 600_000);

  afterAll(async () => {
    const kills = () => Promise.allSettled([...made].flatMap((id) => nodes.filter((n) => n.server).map((n) => Sandbox.kill(id, opts(n)))));
    await tearDownServers(nodes, { before: [kills], after: [() => nats?.stop()] });
  }, 300_000);

  it("a client's forwarded mark does not pin a create; a node's signed mark does", { timeout: 300_000 }, async () => {
    // A cordoned: a create through A can only be placed on B; one A is made to make itself is refused.
    expect((await cordon(a, "cordon", b)).status).toBe(200);
    await until("A knows it is cordoned", () => knowsCordon(a, true));
    try {
      // Unsigned, and signed by the cluster for another request (the SDK creates with POST /v2/sandboxes): both
      // ignored, so the create is placed on B.
      for (const forged of [{ "X-Burrow-Forwarded-By": "node-b" }, signing.headers("POST", "/sandboxes", a.name)]) {
        const sandbox = await Sandbox.create("base", { ...opts(a), apiHeaders: forged, timeoutMs: 120_000 }).catch((err: unknown) => {
          throw new Error(`${String(err)}\nA: ${a.server!.output().slice(-3000)}\nB: ${b.server!.output().slice(-3000)}`);
        });
        made.add(sandbox.sandboxId);
        expect(await ownerOf(sandbox.sandboxId), JSON.stringify(Object.keys(forged))).toMatchObject({ node: "node-b" });
      }
      // Signed as a node signs what it forwards: A makes it itself, hence refuses (cordoned).
      const pinned = await fetch(`${url(a)}/sandboxes`, {
        method: "POST",
        headers: { "X-API-Key": API_KEY, "content-type": "application/json", ...signing.headers("POST", "/sandboxes", a.name) },
        body: JSON.stringify({ templateID: "base" }),
      });
      expect(pinned.status).toBe(503);
      expect(await pinned.json()).toEqual({ code: 503, message: "node node-a is cordoned: it takes no new sandboxes" });
    } finally {
      await cordon(a, "uncordon", b);
    }
    await until("A knows it is uncordoned", () => knowsCordon(a, false));
    for (const id of made) await Sandbox.kill(id, opts(a));
    made.clear();
  });

  it("a team's quota holds across nodes, and a lost node's sandboxes go to their team and stop counting", { timeout: 300_000 }, async () => {
    const admin = keyedApi(url(a), API_KEY);
    const team = await createTeam(a, API_KEY, `quota-${randomBytes(3).toString("hex")}`);
    const other = await createTeam(a, API_KEY, `other-${randomBytes(3).toString("hex")}`);
    expect((await admin("PATCH", `/burrow/v1/teams/${team.teamID}`, { quotas: { maxRunningSandboxes: 2 } })).status).toBe(200);
    const key = team.adminKey.key;
    await until("B knows the team, its key and its quota", async () => {
      const seen = await keyedApi(url(b), key)("GET", `/burrow/v1/teams/${team.teamID}`);
      return seen.status === 200 && (seen.json as { quotas: { maxRunningSandboxes: number } }).quotas.maxRunningSandboxes === 2;
    });
    await until("B knows the other team's key", async () => (await keyedApi(url(b), other.adminKey.key)("GET", "/sandboxes")).status === 200);

    // Two through A: one made on A (signed as forwarded), one placed on B (A cordoned meanwhile).
    const onA = await Sandbox.create("base", { ...opts(a, key), apiHeaders: signing.headers("POST", "/v2/sandboxes", a.name), timeoutMs: 120_000 });
    made.add(onA.sandboxId);
    expect((await cordon(a, "cordon", b)).status).toBe(200);
    await until("A knows it is cordoned", () => knowsCordon(a, true));
    const onB = await Sandbox.create("base", { ...opts(a, key), timeoutMs: 120_000 }).finally(() => cordon(a, "uncordon", b));
    made.add(onB.sandboxId);
    await until("A knows it is uncordoned", () => knowsCordon(a, false));
    expect(await ownerOf(onA.sandboxId)).toMatchObject({ node: "node-a", teamId: team.teamID });
    await until("B's sandbox's record names its team", async () => (await ownerOf(onB.sandboxId))?.teamId === team.teamID);
    expect(await ownerOf(onB.sandboxId)).toMatchObject({ node: "node-b" });
    await new Promise((r) => setTimeout(r, 500));

    // The third: refused through B and through A alike, naming the quota and the team's usage on both nodes.
    for (const node of [b, a]) {
      const third = await keyedApi(url(node), key)("POST", "/sandboxes", { templateID: "base" });
      expect(third.status, `through ${node.name}: ${JSON.stringify(third.json)}`).toBe(429);
      expect(third.json).toEqual({ code: 429, message: "team quota maxRunningSandboxes reached: your team has 2 running sandboxes and may run 2 at once (asked for 1 more)" });
    }
    // Another team is not held back by it (its sandbox made on B).
    const others = await Sandbox.create("base", { ...opts(b, other.adminKey.key), apiHeaders: signing.headers("POST", "/v2/sandboxes", b.name), timeoutMs: 120_000 });
    made.add(others.sandboxId);
    await until("the other team's record names its team", async () => (await ownerOf(others.sandboxId))?.teamId === other.teamID);

    const teamEvents = new LifecycleEvents(url(a), key);
    const otherEvents = new LifecycleEvents(url(a), other.adminKey.key);
    await Promise.all([teamEvents.ready, otherEvents.ready]);
    try {
      await stopServerProcess(b.server!, "SIGKILL");
      await until("the team's stream on A reports B's sandbox lost", () => teamEvents.of("lost", onB.sandboxId) === 1, DOWN_AFTER_MS + 30_000);
      expect((await ownerOf(onB.sandboxId))?.lostAt).toEqual(expect.any(String));
      // The other team's lost sandbox is its own to hear of; neither hears the other's.
      await until("the other team's stream reports its sandbox lost", () => otherEvents.of("lost", others.sandboxId) === 1, 10_000);
      expect(otherEvents.of("lost", onB.sandboxId)).toBe(0);
      expect(teamEvents.of("lost", others.sandboxId)).toBe(0);
    } finally {
      teamEvents.stop();
      otherEvents.stop();
    }

    // The lost sandbox no longer counts: a create succeeds (on A, the node left), and then the limit holds again.
    const afterLoss = await Sandbox.create("base", { ...opts(a, key), timeoutMs: 120_000 });
    made.add(afterLoss.sandboxId);
    expect((await keyedApi(url(a), key)("POST", "/sandboxes", { templateID: "base" })).status).toBe(429);
    // A killed sandbox frees its place.
    expect(await Sandbox.kill(onA.sandboxId, opts(a, key))).toBe(true);
    const afterKill = await Sandbox.create("base", { ...opts(a, key), timeoutMs: 120_000 });
    made.add(afterKill.sandboxId);
    for (const id of [afterLoss.sandboxId, afterKill.sandboxId]) await Sandbox.kill(id, opts(a, key));
  });
});
