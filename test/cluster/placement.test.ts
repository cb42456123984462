// Placement of creates in a cluster of three Burrow nodes (the real CLI, each in its own process with its own state
// directory, instance tag and subnet) on a 3-server NATS JetStream cluster on the loopback. With the official e2b
// SDK pointed at node A: 30 creates spread over all three nodes; a cordoned node gets none, neither placed there nor
// sent to it directly, and forks none of its sandboxes; a snapshot made on node B is created from any node (on B first, then
// also on nodes that fetch it from the object store); `burrow node drain
// --pause` leaves node C with no running sandbox, its sandboxes paused to disk and resumable afterwards; with every
// node cordoned a create is a 503; a node killed while its record still says up is passed over. Where each sandbox
// went is read from the cluster's owner records.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { NatsCluster } from "./nats-cluster.js";
import { clusterSigning } from "./forward-pin.js";
import { until } from "./lifecycle-events.js";
import type { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { stopServerProcess } from "../helpers/server-process.js";
import { runBurrow } from "../cli/run-burrow.js";
import { cliNodes, nodesSeenBy as seenBy, nodeUrl as url, readOwnerRecords, sdkOptions, startCliNodes, waitForNodesUp, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const NAMES = ["node-a", "node-b", "node-c"] as const;

describe("placement of creates over three nodes", () => {
  let nats: NatsCluster;
  const nodes = cliNodes("pl", NAMES);
  const [a, b, c] = nodes as [Node, Node, Node];
  const opts = (node: Node) => sdkOptions(node, API_KEY);
  let signing: ForwardSigning;
  /** Marked as forwarded (signed), a create is made by the node it reaches: how a test puts a sandbox on a given node. */
  const pinned = (node: Node) => ({ ...opts(node), apiHeaders: signing.headers("POST", "/v2/sandboxes", node.name) });
  const cli = (node: Node, args: string[]) =>
    runBurrow(args, { env: { ...process.env, E2B_API_KEY: API_KEY, E2B_API_URL: url(node), E2B_SANDBOX_URL: url(node) } });
  const sandboxes = new Set<string>();

  const nodesSeenBy = (node: Node) => seenBy(node, API_KEY);

  /** The node each sandbox's owner record names. */
  async function owners(ids: readonly string[]): Promise<Map<string, string>> {
    return new Map([...(await readOwnerRecords(nats.urls, ids))].map(([id, record]) => [id, record?.node ?? "(none)"]));
  }

  async function create(node: Node, template = "base", options: object = opts(node)): Promise<Sandbox> {
    const sandbox = await Sandbox.create(template, { ...options, timeoutMs: 300_000 });
    sandboxes.add(sandbox.sandboxId);
    return sandbox;
  }

  async function killAll(ids: Iterable<string>): Promise<void> {
    for (const id of [...ids]) {
      await Sandbox.kill(id, opts(a)).catch(() => undefined);
      sandboxes.delete(id);
    }
  }

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    await startCliNodes(nodes, nats.urls, { apiKey: API_KEY, downAfterMs: 5_000 });
    signing = await clusterSigning(nats.urls);
    // Every node sees the three up, with the templates they have.
    await waitForNodesUp(nodes, API_KEY, 30_000);
  });

  afterAll(async () => {
    await tearDownServers(nodes, { before: [() => killAll(sandboxes)], after: [() => nats?.stop()] });
  });

  it("30 creates through node A spread over all three nodes, each answered as its node gave it", async () => {
    const created: Sandbox[] = [];
    // Three at a time, as a client with a few workers would.
    for (let round = 0; round < 10; round++) created.push(...(await Promise.all([0, 1, 2].map(() => create(a)))));
    const placed = await owners(created.map((s) => s.sandboxId));
    const perNode = Object.fromEntries(NAMES.map((name) => [name, [...placed.values()].filter((n) => n === name).length]));
    process.stdout.write(`30 creates through node A: ${JSON.stringify(perNode)}\n`);
    expect([...placed.values()].every((n) => (NAMES as readonly string[]).includes(n)), JSON.stringify([...placed])).toBe(true);
    for (const name of NAMES) expect(perNode[name], JSON.stringify(perNode)).toBeGreaterThanOrEqual(4);
    // A sandbox placed on another node is used through A as any other.
    const elsewhere = created.find((s) => placed.get(s.sandboxId) !== "node-a")!;
    expect((await elsewhere.commands.run("echo placed")).stdout).toBe("placed\n");
    // The list through A has them all.
    const listed = (await Sandbox.list({ ...opts(a), limit: 100 }).nextItems()).map((s) => s.sandboxId);
    expect(listed.sort()).toEqual(created.map((s) => s.sandboxId).sort());
    await killAll(created.map((s) => s.sandboxId));
  });

  it("a cordoned node gets no creates: none placed there, and those sent to it go elsewhere", async () => {
    const before = await create(c, "base", pinned(c));
    const cordon = await cli(a, ["node", "cordon", "node-c"]);
    expect(cordon.stdout, cordon.stderr).toBe("node node-c cordoned\n");
    await until("node C knows it is cordoned", async () => (await nodesSeenBy(c)).find((n) => n.name === "node-c")?.cordoned === true);
    const created: Sandbox[] = [];
    for (let i = 0; i < 6; i++) created.push(await create(a), await create(c));
    const placed = await owners(created.map((s) => s.sandboxId));
    expect([...placed.values()].filter((n) => n === "node-c"), JSON.stringify([...placed])).toEqual([]);
    expect(new Set(placed.values())).toEqual(new Set(["node-a", "node-b"]));
    // Created through C, placed on another node, used through C.
    const viaC = created[1]!;
    expect((await viaC.commands.run("echo from elsewhere")).stdout).toBe("from elsewhere\n");
    // Even a create another node forwards to it is refused, in the API's error shape.
    const refused = await fetch(`${url(c)}/sandboxes`, {
      method: "POST",
      headers: { "X-API-Key": API_KEY, "content-type": "application/json", ...signing.headers("POST", "/sandboxes", c.name) },
      body: JSON.stringify({ templateID: "base" }),
    });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ code: 503, message: "node node-c is cordoned: it takes no new sandboxes" });
    // Nor does it fork: the fork of its sandbox (sent on to it by A) would be a new sandbox there.
    const fork = await fetch(`${url(a)}/sandboxes/${before.sandboxId}/fork`, { method: "POST", headers: { "X-API-Key": API_KEY, "content-type": "application/json" }, body: "{}" });
    expect(fork.status).toBe(503);
    expect(await fork.json()).toEqual({ code: 503, message: "node node-c is cordoned: it takes no new sandboxes" });
    // Its sandboxes are still served: one made there before the cordon, through A.
    const viaA = await Sandbox.connect(before.sandboxId, { ...opts(a), timeoutMs: 300_000 });
    expect((await viaA.commands.run("echo still served")).stdout).toBe("still served\n");
    await killAll([before.sandboxId, ...created.map((s) => s.sandboxId)]);
    const uncordon = await cli(a, ["node", "uncordon", "node-c"]);
    expect(uncordon.stdout, uncordon.stderr).toBe("node node-c uncordoned\n");
  });

  it("a snapshot made on node B is created from any node: on B first, elsewhere once B is busier (fetched there)", async () => {
    const source = await create(b, "base", pinned(b));
    const created: Sandbox[] = [];
    try {
      expect((await owners([source.sandboxId])).get(source.sandboxId)).toBe("node-b");
      await source.files.write("/home/user/only-on-b.txt", "layers of node B");
      const snapshot = await source.createSnapshot();
      await until("node B's record lists the snapshot", async () =>
        (await nodesSeenBy(a)).find((n) => n.name === "node-b")?.load.templates?.includes(snapshot.snapshotId) === true,
      );
      for (let i = 0; i < 3; i++) created.push(await create(a, snapshot.snapshotId), await create(c, snapshot.snapshotId));
      const placed = await owners(created.map((s) => s.sandboxId));
      // The node that has it wins while a fetch costs more than its load (cluster/placement.ts, FETCH_PENALTY).
      expect(placed.get(created[0]!.sandboxId), JSON.stringify([...placed])).toBe("node-b");
      for (const s of created) expect(await s.files.read("/home/user/only-on-b.txt")).toBe("layers of node B");
      // Any other node that took one fetched the snapshot from the cluster's object store and now has it.
      for (const node of new Set(placed.values())) {
        await until(`${node} lists the snapshot`, async () => (await nodesSeenBy(a)).find((n) => n.name === node)?.load.templates?.includes(snapshot.snapshotId) === true);
      }
      // A template no node has is the node's own 404, as on one machine.
      await expect(Sandbox.create("no-such-template", opts(a))).rejects.toThrow(/not found/);
    } finally {
      await killAll([source.sandboxId, ...created.map((s) => s.sandboxId)]);
    }
  });

  it("drain cordons node C; with --pause its sandboxes are paused to disk and resumable afterwards", async () => {
    const onC = [await create(c, "base", pinned(c)), await create(c, "base", pinned(c))];
    expect(new Set((await owners(onC.map((s) => s.sandboxId))).values())).toEqual(new Set(["node-c"]));
    await onC[0]!.files.write("/home/user/drained.txt", "kept on disk");
    // Without --pause, running sandboxes keep running: the drain reports them when its time is up.
    const waited = await cli(a, ["node", "drain", "node-c", "--timeout", "1"]);
    expect(waited.code).toBe(1);
    expect(waited.stdout).toContain("node node-c cordoned; still running after");
    for (const s of onC) expect(waited.stdout).toContain(s.sandboxId);

    const drained = await cli(a, ["node", "drain", "node-c", "--pause", "--timeout", "120", "--json"]);
    expect(drained.code, drained.stderr).toBe(0);
    const report = JSON.parse(drained.stdout) as { node: string; paused: string[]; running: string[]; drained: boolean; failed: unknown[] };
    expect(report).toMatchObject({ node: "node-c", drained: true, running: [], failed: [] });
    expect(report.paused).toEqual(onC.map((s) => s.sandboxId).sort());
    await until("node C's record shows no running sandbox", async () => {
      const view = (await nodesSeenBy(a)).find((n) => n.name === "node-c");
      return view?.cordoned === true && view.load.runningSandboxes === 0;
    });
    for (const s of onC) expect((await Sandbox.getInfo(s.sandboxId, opts(a))).state).toBe("paused");
    // A create while C is drained goes elsewhere.
    const meanwhile = await create(c);
    expect((await owners([meanwhile.sandboxId])).get(meanwhile.sandboxId)).not.toBe("node-c");
    // Resumed where it is (its layers are on C), through A, with its files.
    const resumed = await Sandbox.connect(onC[0]!.sandboxId, { ...opts(a), timeoutMs: 300_000 });
    expect(await resumed.files.read("/home/user/drained.txt")).toBe("kept on disk");
    expect((await owners([resumed.sandboxId])).get(resumed.sandboxId)).toBe("node-c");
    await killAll([...onC.map((s) => s.sandboxId), meanwhile.sandboxId]);
    expect((await cli(a, ["node", "uncordon", "node-c"])).code).toBe(0);
  });

  it("with every node cordoned a create is a 503; a chosen node that does not answer is passed over", async () => {
    for (const node of nodes) expect((await cli(a, ["node", "cordon", node.name])).code).toBe(0);
    const refused = await fetch(`${url(a)}/sandboxes`, { method: "POST", headers: { "X-API-Key": API_KEY, "content-type": "application/json" }, body: JSON.stringify({ templateID: "base" }) });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ code: 503, message: "no node can take a sandbox of template 'base' now (node-a cordoned, node-b cordoned, node-c cordoned)" });
    for (const node of nodes) expect((await cli(a, ["node", "uncordon", node.name])).code).toBe(0);

    // A and B busier than C, so that C is the first choice; then C's process is killed (a machine lost). Its record
    // says up for the down window (5 s): creates placed on it meet a refused connection and go to the next node.
    const busy = [await create(a, "base", pinned(a)), await create(b, "base", pinned(b)), await create(b, "base", pinned(b))];
    await until("node A's view has B's sandboxes and C uncordoned", async () => {
      const seen = await nodesSeenBy(a);
      return seen.find((n) => n.name === "node-b")?.load.runningSandboxes === 2 && seen.every((n) => !n.cordoned);
    });
    await stopServerProcess(c.server!, "SIGKILL");
    const created: Sandbox[] = [];
    for (let i = 0; i < 3; i++) created.push(await create(a));
    const placed = await owners(created.map((s) => s.sandboxId));
    expect([...placed.values()].every((n) => n === "node-a" || n === "node-b"), JSON.stringify([...placed])).toBe(true);
    expect(a.server!.output()).toMatch(/a node did not take a placed create; trying the next/);
    expect(a.server!.output()).toMatch(/"node":"node-c"/);
    await killAll([...busy, ...created].map((s) => s.sandboxId));
  });
});
