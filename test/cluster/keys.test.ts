// Teams and API keys known to every node of a cluster: two Burrow nodes (the real CLI, each with its own state
// directory, subnet and its own instance admin key) on a 3-server NATS JetStream cluster on the loopback. A team and
// its admin key made on node A by A's instance admin work on node B: the official e2b SDK pointed at B creates the
// team's sandboxes (wherever placement puts them, and on each node), runs a command, lists only the team's sandboxes,
// and A lists the same. The key revoked on B is refused on A afterwards; the instance admin keys stay each node's own.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { NatsCluster } from "./nats-cluster.js";
import { clusterSigning } from "./forward-pin.js";
import type { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { keyedApi } from "../helpers/keyed-api.js";
import { until } from "./lifecycle-events.js";
import { cliNodes, createTeam, nodeUrl as url, sdkOptions as opts, startCliNodes, waitForNodesUp, type CliNode } from "./cli-nodes.js";

interface Node extends CliNode {
  /** This node's instance admin key (BURROW_API_KEY): not shared with the other node. */
  adminKey: string;
}

describe("teams and keys shared by two nodes", () => {
  let nats: NatsCluster | undefined;
  const nodes: Node[] = cliNodes("ky", ["node-a", "node-b"]).map((node) => ({ ...node, adminKey: `e2b_${randomBytes(20).toString("hex")}` }));
  const [a, b] = nodes as [Node, Node];
  let signing: ForwardSigning;
  /** Marked as forwarded (signed), a create is made by the node it reaches: how a test puts a sandbox on a given node. */
  const pinned = (node: Node, apiKey: string) => ({ ...opts(node, apiKey), apiHeaders: signing.headers("POST", "/v2/sandboxes", node.name) });
  const made: Array<{ id: string; node: Node }> = [];

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    // Each node with its own instance admin key.
    await startCliNodes(nodes, nats.urls, (node) => ({ apiKey: node.adminKey, downAfterMs: 5_000 }));
    signing = await clusterSigning(nats.urls);
    await waitForNodesUp(nodes, (node) => node.adminKey);
  }, 600_000);

  afterAll(async () => {
    // Each sandbox killed by the instance admin of the node that has it (the team's key is revoked by then).
    const kills = () => Promise.allSettled(made.map((m) => Sandbox.kill(m.id, opts(m.node, m.node.adminKey))));
    await tearDownServers(nodes, { before: [kills], after: [() => nats?.stop()] });
  }, 300_000);

  it("a team and key made on A create, run and list on B and A; the key revoked on B is refused on A", { timeout: 300_000 }, async () => {
    const team = await createTeam(a, a.adminKey, `keys-${randomBytes(3).toString("hex")}`);
    const teamKey = team.adminKey.key;
    // A's instance admin key is A's alone.
    expect((await keyedApi(url(b), a.adminKey)("GET", "/sandboxes")).status).toBe(401);

    // B learns of the team and its key: the same team id and name, the same key id.
    await until("B knows the team's key", async () => (await keyedApi(url(b), teamKey)("GET", `/burrow/v1/teams/${team.teamID}`)).status === 200, 20_000);
    const onB = await keyedApi(url(b), b.adminKey)("GET", `/api-keys?teamID=${team.teamID}`);
    expect(onB.status).toBe(200);
    expect((onB.json as Array<{ id: string; teamID: string }>).map((k) => [k.id, k.teamID])).toEqual([[team.adminKey.id, team.teamID]]);

    // The SDK at B: one create placed wherever placement puts it, one made on each node.
    const placed = await Sandbox.create("base", { ...opts(b, teamKey), timeoutMs: 120_000 });
    made.push({ id: placed.sandboxId, node: b });
    const onA = await Sandbox.create("base", { ...pinned(a, teamKey), timeoutMs: 120_000 });
    made.push({ id: onA.sandboxId, node: a });
    const onNodeB = await Sandbox.create("base", { ...pinned(b, teamKey), timeoutMs: 120_000 });
    made.push({ id: onNodeB.sandboxId, node: b });
    const ran = await placed.commands.run("echo team on $(hostname)");
    expect(ran.exitCode).toBe(0);
    expect(ran.stdout).toMatch(/^team on /);
    expect((await (await Sandbox.connect(onA.sandboxId, opts(b, teamKey))).commands.run("echo via b")).stdout).toBe("via b\n");
    // Another team's sandbox (A's default team), which the team's lists must leave out.
    const other = await Sandbox.create("base", { ...pinned(a, a.adminKey), timeoutMs: 120_000 });
    made.push({ id: other.sandboxId, node: a });

    const teamIds = [placed.sandboxId, onA.sandboxId, onNodeB.sandboxId].sort();
    for (const node of [b, a]) {
      const listed = await Sandbox.list(opts(node, teamKey)).nextItems();
      expect(listed.map((s) => s.sandboxId).sort(), `listed through ${node.name}`).toEqual(teamIds);
    }

    // Revoked on B by B's instance admin: refused on A within a heartbeat or so.
    expect((await keyedApi(url(b), b.adminKey)("DELETE", `/api-keys/${team.adminKey.id}`)).status).toBe(204);
    expect((await keyedApi(url(b), teamKey)("GET", "/sandboxes")).status).toBe(401);
    const revokedAt = Date.now();
    await until("A refuses the revoked key", async () => (await keyedApi(url(a), teamKey)("GET", "/sandboxes")).status === 401, 5_000);
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    // Its sandboxes are still the team's (the instance admin of their node reaches them).
    expect((await keyedApi(url(a), a.adminKey)("GET", `/sandboxes/${onA.sandboxId}`)).status).toBe(200);
  });
});
