// Two Burrow nodes (the real CLI, each in a process of its own with its own state directory, instance tag and subnet)
// joined to a 3-server NATS JetStream cluster on the loopback (node A talks to server 1, node B to server 2; the
// buckets have 3 replicas). With the official e2b SDK pointed at node A, a sandbox
// created on node B is reachable through A: connect, commands, files, a port served by the sandbox (by Host and by
// E2B's headers), get, list (both nodes' sandboxes) and kill. `burrow node list` shows both nodes; a cordon
// round-trips and outlives heartbeats; ownership records come and go with the sandboxes; with the third NATS server
// killed, records are all there and a new sandbox on B is still recorded and reachable through A.
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { NatsCluster } from "./nats-cluster.js";
import { clusterSigning } from "./forward-pin.js";
import type { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { runBurrow } from "../cli/run-burrow.js";
import { UPGRADE_ECHO } from "./upgrade-echo.js";
import { cliNodes, createTeam, nodeUrl as url, readOwnerRecord, sdkOptions, startCliNodes, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;

/** An upgrade through a node to the sandbox's port 8001: what comes back for `text` once the protocol switched. */
function upgradeVia(port: number, host: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", headers: { host, connection: "Upgrade", upgrade: "echo" } });
    req.on("upgrade", (_res, socket) => {
      let got = "";
      socket.on("data", (chunk: Buffer) => {
        got += chunk.toString();
        if (got.length >= text.length) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on("error", reject);
      socket.write(text);
    });
    req.on("response", (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
    req.on("error", reject);
    req.end();
  });
}

/** GET through a node with the given Host header (node:http: fetch will not send a Host of the caller's choosing). */
function getVia(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("a cluster of two nodes on a 3-server NATS cluster", () => {
  let nats: NatsCluster;
  const nodes = cliNodes("clu", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const opts = (node: Node) => sdkOptions(node, API_KEY);
  const cli = (node: Node, args: string[]) => runBurrow(args, { env: { ...process.env, E2B_API_KEY: API_KEY, E2B_API_URL: url(node), E2B_SANDBOX_URL: url(node) } });
  const sandboxes: Sandbox[] = [];
  let signing: ForwardSigning;

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    // Both nodes start at once (their first start builds the base template): the cluster needs no start order.
    // Node B keeps one pooled sandbox, so that its record's pool fill is a real one.
    await startCliNodes(nodes, nats.urls, (node) => ({ apiKey: API_KEY, downAfterMs: 5_000, poolSize: node === b ? 1 : 0 }));
    signing = await clusterSigning(nats.urls);
  });

  afterAll(async () => {
    await tearDownServers(nodes, { before: [() => Promise.allSettled(sandboxes.map((s) => s.kill()))], after: [() => nats?.stop()] });
  });

  it("node list shows both nodes up; a cordon round-trips and outlives heartbeats", async () => {
    let listed = await cli(a, ["node", "list", "--json"]);
    for (let i = 0; i < 50 && !listed.stdout.includes("node-b"); i++) {
      await new Promise((r) => setTimeout(r, 200));
      listed = await cli(a, ["node", "list", "--json"]);
    }
    expect(listed.code, listed.stderr).toBe(0);
    const { self, nodes: seen } = JSON.parse(listed.stdout) as { self: string; nodes: Array<{ name: string; status: string; cordoned: boolean; apiUrl: string }> };
    expect(self).toBe("node-a");
    expect(seen.map((n) => [n.name, n.status, n.cordoned, n.apiUrl])).toEqual([
      ["node-a", "up", false, `http://127.0.0.1:${a.port}`],
      ["node-b", "up", false, `http://127.0.0.1:${b.port}`],
    ]);

    const cordon = await cli(a, ["node", "cordon", "node-b"]);
    expect(cordon.stdout, cordon.stderr).toBe("node node-b cordoned\n");
    // Several of node-b's heartbeats later, node-b itself still reports the cordon.
    await new Promise((r) => setTimeout(r, 2_000));
    const fromB = await fetch(`${url(b)}/burrow/v1/nodes`, { headers: { "X-API-Key": API_KEY } }).then((r) => r.json() as Promise<{ nodes: Array<{ name: string; cordoned: boolean }> }>);
    expect(fromB.nodes.find((n) => n.name === "node-b")?.cordoned).toBe(true);
    const uncordon = await cli(b, ["node", "uncordon", "node-b"]);
    expect(uncordon.stdout, uncordon.stderr).toBe("node node-b uncordoned\n");
    // Nodes are the operator's: a team's key is refused.
    const team = await createTeam(a, API_KEY, "cluster-team");
    const teamKey = team.adminKey.key;
    expect((await fetch(`${url(a)}/burrow/v1/nodes`, { headers: { "X-API-Key": teamKey } })).status).toBe(403);
    // Keys are each node's own in this slice: node B does not know the team's key, so the team has nothing there and
    // its list through A is A's answer alone (not a failure).
    const teamList = await fetch(`${url(a)}/v2/sandboxes`, { headers: { "X-API-Key": teamKey } });
    expect(teamList.status).toBe(200);
    expect(await teamList.json()).toEqual([]);
    // Node B's load as its heartbeats report it: its warm pool of base, filled.
    let poolFill: unknown;
    for (let i = 0; i < 100; i++) {
      const listedNow = JSON.parse((await cli(a, ["node", "list", "--json"])).stdout) as { nodes: Array<{ name: string; load: { poolFill: unknown; freeMemoryBytes: number } }> };
      const nodeB = listedNow.nodes.find((n) => n.name === "node-b")!;
      expect(nodeB.load.freeMemoryBytes).toBeGreaterThan(0);
      poolFill = nodeB.load.poolFill;
      if (JSON.stringify(poolFill) === JSON.stringify([{ template: "base", ready: 1, target: 1 }])) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(poolFill).toEqual([{ template: "base", ready: 1, target: 1 }]);
    const table = await cli(a, ["node", "list"]);
    expect(table.stdout).toMatch(/node-a \(this\)\s+up\s+no/);
    expect(table.stdout).toMatch(/node-b\s+up\s+no\s+0\s+\d+\s+base 1\/1/);
  });

  it("a sandbox created on node B is used through node A: connect, commands, files, a port, get, list, kill", async () => {
    // Each create pinned to the node it is sent to (signed as a node would): placement would send both to B, whose
    // warm pool wins, and this is about routing, not placement. A signature is for one node, once.
    const pinned = (node: Node) => ({ apiHeaders: signing.headers("POST", "/v2/sandboxes", node.name), timeoutMs: 300_000 });
    const onB = await Sandbox.create("base", { ...opts(b), ...pinned(b) });
    sandboxes.push(onB);
    const onA = await Sandbox.create("base", { ...opts(a), ...pinned(a) });
    sandboxes.push(onA);

    // The ownership record names node B.
    expect((await readOwnerRecord(nats.urls, onB.sandboxId))?.node).toBe("node-b");
    expect((await readOwnerRecord(nats.urls, onA.sandboxId))?.node).toBe("node-a");

    const viaA = await Sandbox.connect(onB.sandboxId, { ...opts(a), timeoutMs: 300_000 });
    const run = await viaA.commands.run("echo from $(hostname) && cat /proc/sys/kernel/hostname");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("from ");
    await viaA.files.write("/home/user/through-a.txt", "written through node A");
    expect(await onB.files.read("/home/user/through-a.txt")).toBe("written through node A");
    await onB.files.write("/home/user/www/index.html", "served by a sandbox on node B\n");
    expect(await viaA.files.read("/home/user/www/index.html")).toBe("served by a sandbox on node B\n");

    // A port served by the sandbox, through node A: by Host (getHost's form, A's port) and by E2B's headers.
    await viaA.commands.run("cd /home/user/www && python3 -m http.server 8000", { background: true });
    let byHost = { status: 0, body: "" };
    for (let i = 0; i < 100 && byHost.status !== 200; i++) {
      byHost = await getVia(a.port, "/", { host: `8000-${onB.sandboxId}.burrow.localhost:${a.port}` }).catch(() => ({ status: 0, body: "" }));
      if (byHost.status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(byHost).toEqual({ status: 200, body: "served by a sandbox on node B\n" });
    const byHeaders = await getVia(a.port, "/index.html", { "E2b-Sandbox-Id": onB.sandboxId, "E2b-Sandbox-Port": "8000" });
    expect(byHeaders).toEqual({ status: 200, body: "served by a sandbox on node B\n" });
    // What another node already forwarded is answered where it arrives, never forwarded again (no loops).
    const marked = await getVia(a.port, "/index.html", { "E2b-Sandbox-Id": onB.sandboxId, "E2b-Sandbox-Port": "8000", ...signing.headers("GET", "/index.html", a.name) });
    expect(marked.status).toBe(502);
    // A client's mark without the cluster's signature (or with one for another path) is ignored: forwarded as any.
    for (const forged of [{ "X-Burrow-Forwarded-By": "node-b" }, signing.headers("GET", "/other.html", a.name)]) {
      expect(await getVia(a.port, "/index.html", { "E2b-Sandbox-Id": onB.sandboxId, "E2b-Sandbox-Port": "8000", ...forged })).toEqual(byHeaders);
    }

    // An upgraded connection (as WebSockets are) to the sandbox through A.
    await viaA.files.write("/home/user/upgrade-echo.py", UPGRADE_ECHO);
    await viaA.commands.run("python3 /home/user/upgrade-echo.py", { background: true });
    let echoed = "";
    for (let i = 0; i < 50 && echoed === ""; i++) {
      echoed = await upgradeVia(a.port, `8001-${onB.sandboxId}.burrow.localhost:${a.port}`, "hello through node a").catch(() => "");
      if (echoed === "") await new Promise((r) => setTimeout(r, 200));
    }
    expect(echoed).toBe("HELLO THROUGH NODE A");

    // REST through A: get answers from node B's state, the list has both nodes' sandboxes.
    const info = await Sandbox.getInfo(onB.sandboxId, opts(a));
    expect(info.sandboxId).toBe(onB.sandboxId);
    const listed: string[] = [];
    const paginator = Sandbox.list({ ...opts(a), limit: 1 });
    while (paginator.hasNext) listed.push(...(await paginator.nextItems()).map((s) => s.sandboxId));
    expect(listed.sort()).toEqual([onA.sandboxId, onB.sandboxId].sort());
    const v1 = await fetch(`${url(a)}/sandboxes`, { headers: { "X-API-Key": API_KEY } }).then((r) => r.json() as Promise<Array<{ sandboxID: string }>>);
    expect(v1.map((s) => s.sandboxID).sort()).toEqual([onA.sandboxId, onB.sandboxId].sort());
    // Node B alone lists only its own.
    const fromB = await fetch(`${url(b)}/v2/sandboxes`, { headers: { "X-API-Key": API_KEY, ...signing.headers("GET", "/v2/sandboxes", b.name) } }).then((r) => r.json() as Promise<Array<{ sandboxID: string }>>);
    expect(fromB.map((s) => s.sandboxID)).toEqual([onB.sandboxId]);

    // A fork through A happens on B (where the layers are); its child is recorded as B's and usable through A.
    const forked = await fetch(`${url(a)}/sandboxes/${onB.sandboxId}/fork`, {
      method: "POST",
      headers: { "X-API-Key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ count: 1 }),
    }).then((r) => r.json() as Promise<Array<{ sandbox?: { sandboxID: string } }>>);
    const childId = forked[0]?.sandbox?.sandboxID;
    expect(childId, JSON.stringify(forked)).toBeDefined();
    expect((await readOwnerRecord(nats.urls, childId!))?.node).toBe("node-b");
    const child = await Sandbox.connect(childId!, { ...opts(a), timeoutMs: 300_000 });
    sandboxes.push(child);
    expect(await child.files.read("/home/user/through-a.txt")).toBe("written through node A");
    await child.kill();

    // Killed through A: gone on B, its ownership record removed.
    expect(await Sandbox.kill(onB.sandboxId, opts(a))).toBe(true);
    expect(await Sandbox.getInfo(onB.sandboxId, opts(b)).then(() => "found", () => "gone")).toBe("gone");
    const nc2 = await connect({ servers: nats.urls[0]! });
    try {
      const owners = await new Kvm(nc2).open("burrow_sandbox_owners");
      for (let i = 0; i < 50 && (await owners.get(onB.sandboxId))?.operation === "PUT"; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await owners.get(onB.sandboxId))?.operation ?? "gone").not.toBe("PUT");
      const status = await owners.status();
      expect(status.replicas).toBe(3);
      // Reads go to the stream's leader, never to a replica behind a write.
      expect(status.streamInfo.config.allow_direct).toBe(false);
    } finally {
      await nc2.close();
    }
  });

  it("with one NATS server of three killed, nothing is lost and the cluster goes on", async () => {
    const before = await Sandbox.list(opts(a)).nextItems();
    const killedAt = Date.now();
    await nats.kill(2);
    // Heartbeats (and the watches that bring them) may stall while JetStream elects new leaders for what the killed
    // server led; a node then looks down and its sandboxes are left out of lists. Wait for both nodes' heartbeats
    // written after the kill.
    const bothBeatSince = async (since: number) => {
      const listed = await cli(a, ["node", "list", "--json"]);
      const seen = listed.code === 0 ? (JSON.parse(listed.stdout) as { nodes: Array<{ status: string; lastSeenAt: string }> }).nodes : [];
      return seen.length === 2 && seen.every((n) => n.status === "up" && Date.parse(n.lastSeenAt) > since);
    };
    const waitForHeartbeats = async (since: number) => {
      for (let i = 0; i < 120 && !(await bothBeatSince(since)); i++) await new Promise((r) => setTimeout(r, 500));
      expect(await bothBeatSince(since), "no heartbeats of both nodes within 60 s of losing a NATS server").toBe(true);
      process.stdout.write(`heartbeats of both nodes seen ${Date.now() - killedAt} ms after the NATS server was killed\n`);
    };
    await waitForHeartbeats(killedAt);
    // JetStream may need a few seconds to elect new leaders for the buckets the killed server led.
    let created: Sandbox | undefined;
    for (let i = 0; i < 10 && !created; i++) {
      created = await Sandbox.create("base", { ...opts(b), timeoutMs: 300_000 }).catch(() => undefined);
      if (!created) await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(created, "no create on node B succeeded with one NATS server down").toBeDefined();
    sandboxes.push(created!);
    const viaA = await Sandbox.connect(created!.sandboxId, { ...opts(a), timeoutMs: 300_000 });
    expect((await viaA.commands.run("echo still here")).stdout).toBe("still here\n");
    await waitForHeartbeats(Date.now());
    const after = (await Sandbox.list(opts(a)).nextItems()).map((s) => s.sandboxId).sort();
    const own = async (node: Node) => (await fetch(`${url(node)}/v2/sandboxes`, { headers: { "X-API-Key": API_KEY, ...signing.headers("GET", "/v2/sandboxes", node.name) } })).text();
    const diag = `before ${before.map((s) => s.sandboxId)} created ${created!.sandboxId} A ${await own(a)} B ${await own(b)} nodes ${(await cli(a, ["node", "list", "--json"])).stdout}`;
    expect(after, diag).toEqual([...before.map((s) => s.sandboxId), created!.sandboxId].sort());
    const listed = await cli(a, ["node", "list", "--json"]);
    expect((JSON.parse(listed.stdout) as { nodes: Array<{ status: string }> }).nodes.map((n) => n.status)).toEqual(["up", "up"]);
  });
});
