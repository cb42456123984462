// The cluster as issue 15 asks to show it: three Burrow nodes (the real CLI), each in its own network namespace with
// its own address on a test LAN, bridge subnet and state directory (node-namespaces.ts), on a 3-server NATS JetStream
// cluster listening on the host's LAN address. The official e2b SDK talks to node A only, from the host's namespace
// across the LAN. A node cannot reach another node's sandboxes except through that node (they are behind its own
// network stack), so whatever works on a sandbox of B or C through A was forwarded, and the port server in the
// sandbox says which address asked it: its own node's bridge. 30 creates spread over the nodes; commands, streamed
// output, files, a port and an upgraded connection reach sandboxes on other nodes; a sandbox's own connections leave
// masqueraded by its node's namespace, and its node's resolver and egress proxy work there (lan-services.ts); a
// template built on A is started on C while A and B are cordoned (which then get no creates); one NATS server of three
// killed loses nothing; every process in node C's namespace SIGKILLed has its sandboxes reported lost within the
// window while new creates go to A and B, and C restarted takes them back, each once. The nodes share one cluster
// across the tests, in this order.
import { randomBytes } from "node:crypto";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ALL_TRAFFIC, Sandbox, SandboxNotFoundError, Template, type SandboxOpts } from "e2b";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { nodesSeenBy as seenBy, nodeUrl as url, readOwnerRecords, sdkOptions, startCliNode, startCliNodes, waitForNodesUp, type CliNodeSettings } from "./cli-nodes.js";
import { ClusterLan, type LanNode } from "./node-namespaces.js";
import { startLanServices, type LanServices } from "./lan-services.js";
import { NatsCluster } from "./nats-cluster.js";
import { LifecycleEvents, until } from "./lifecycle-events.js";
import { UPGRADE_ECHO } from "./upgrade-echo.js";
import { tearDownServers } from "../helpers/tear-down.js";
import type { ServerProcess } from "../helpers/server-process.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const NAMES = ["node-a", "node-b", "node-c"] as const;
/** Every node listens on it, each on its own address in its own namespace, where nothing else listens. */
const PORT = 3000 + (randomBytes(2).readUInt16BE() % 20_000);
const DOWN_AFTER_MS = 4_000;
const TEMPLATE = `lan-${randomBytes(3).toString("hex")}`;

type Node = LanNode & { port: number; server?: ServerProcess };

/** Answers any GET with the address that connected to it: the sandbox's side of whoever reached it. */
const WHO_ASKS = `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.client_address[0].encode()
        self.send_response(200); self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8000), H).serve_forever()
`;

/** An HTTP request to `host:port` with headers of the caller's choosing (fetch will not send a chosen Host). */
function httpVia(node: Node, headers: Record<string, string>, upgradeText?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: node.instance.host, port: node.port, path: "/", headers }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("upgrade", (_res, socket) => {
      let got = "";
      socket.on("data", (chunk: Buffer) => {
        got += chunk.toString();
        if (got.length >= (upgradeText ?? "").length) {
          socket.destroy();
          resolve({ status: 101, body: got });
        }
      });
      socket.on("error", reject);
      socket.write(upgradeText ?? "");
    });
    req.on("error", reject);
    req.end();
  });
}

/** The first address of a node's bridge subnet: its gateway, from which its own gateway reaches its sandboxes. */
function gatewayOf(node: Node): string {
  const [a, b, c, d] = node.instance.subnet.split("/")[0]!.split(".").map(Number) as [number, number, number, number];
  return `${a}.${b}.${c}.${d + 1}`;
}

describe("three nodes, each in its own network namespace", () => {
  // Made in beforeAll, not when the file is collected: a run that skips these tests must leave no LAN behind.
  let lan: ClusterLan | undefined;
  let services: LanServices | undefined;
  const nodes: Node[] = [];
  let a: Node, b: Node, c: Node;
  let nats: NatsCluster | undefined;
  const opts = (node: Node) => sdkOptions(node, API_KEY);
  const made = new Set<string>();
  /** Sandboxes of each node, from the first test on. */
  const on = new Map<string, Sandbox[]>();

  /** Each node says where the others reach it (its LAN address) and resolves through the LAN's resolver. */
  const settings = (node: Node): CliNodeSettings => ({ apiKey: API_KEY, downAfterMs: DOWN_AFTER_MS, args: ["--node-url", url(node)], env: { BURROW_DNS_UPSTREAM: services!.dnsUpstream } });
  const owners = (ids: Iterable<string>) => readOwnerRecords(nats!.urls, ids);

  async function published(templateId: string): Promise<boolean> {
    const nc = await connect({ servers: nats!.urls });
    try {
      return (await (await new Kvm(nc).open("burrow_templates")).get(templateId))?.operation === "PUT";
    } finally {
      await nc.close();
    }
  }

  async function create(template = "base", more: Partial<SandboxOpts> = {}): Promise<Sandbox> {
    const sandbox = await Sandbox.create(template, { ...opts(a), timeoutMs: 600_000, ...more });
    made.add(sandbox.sandboxId);
    return sandbox;
  }

  const nodeApi = (path: string, method = "GET") => fetch(`${url(a)}${path}`, { method, headers: { "X-API-Key": API_KEY } });
  const nodesSeenBy = (node: Node) => seenBy(node, API_KEY);

  beforeAll(async () => {
    lan = ClusterLan.create(NAMES, "lan");
    nodes.push(...lan.nodes.map((n) => ({ ...n, port: PORT })));
    [a, b, c] = nodes as [Node, Node, Node];
    services = await startLanServices(lan.hostAddress, { "lan-allowed.test": lan.hostAddress, "lan-denied.test": lan.hostAddress });
    nats = await NatsCluster.start(3, 3, lan.hostAddress);
    await startCliNodes(nodes, nats.urls, settings);
    await waitForNodesUp(nodes, API_KEY);
  }, 600_000);

  afterAll(async () => {
    const kills = () => Promise.allSettled([...made].map((id) => Sandbox.kill(id, opts(a))));
    const deleteTemplate = () => nodeApi(`/templates/${TEMPLATE}`, "DELETE").catch(() => undefined);
    await tearDownServers(nodes, { before: [kills, deleteTemplate], after: [() => nats?.stop(), () => services?.close(), () => lan?.destroy()] });
  }, 300_000);

  // A failed step shows what the nodes warned about meanwhile (cluster failures are otherwise told by timeouts only).
  afterEach((ctx) => {
    if (ctx.task.result?.state !== "fail") return;
    for (const node of nodes) {
      const lines = (node.server?.output() ?? "").split("\n").filter((l) => /"level":[456]0|sandbox (lost|recovered)/.test(l)).slice(-30);
      process.stdout.write(`--- ${node.name}: last warnings ---\n${lines.map((l) => l.slice(0, 500)).join("\n")}\n`);
    }
  });

  it("each node's network is in its namespace: its bridge is there and not on the host", () => {
    // Not a test of the product so much as of the setup the rest relies on.
    for (const node of nodes) {
      expect(lan!.linksOf(node.instance.netns)).toContain(`burrow-${node.instance.instance}`);
      expect(lan!.linksOf()).not.toContain(`burrow-${node.instance.instance}`);
    }
  });

  it("30 creates through node A spread over the three nodes, each sandbox on its node's own subnet", { timeout: 300_000 }, async () => {
    const created: Sandbox[] = [];
    // Three at a time, as a client with a few workers would.
    for (let round = 0; round < 10; round++) created.push(...(await Promise.all([0, 1, 2].map(() => create()))));
    const placed = await owners(created.map((s) => s.sandboxId));
    const of = (node: Node) => created.filter((s) => placed.get(s.sandboxId)?.node === node.name);
    const perNode = Object.fromEntries(nodes.map((n) => [n.name, of(n).length]));
    process.stdout.write(`30 creates through node A: ${JSON.stringify(perNode)}\n`);
    for (const node of nodes) expect(perNode[node.name], JSON.stringify(perNode)).toBeGreaterThanOrEqual(1);
    expect(Object.values(perNode).reduce((x, y) => x + y, 0)).toBe(30);
    // The sandbox's address is on its owner's bridge: it lives in that node's namespace.
    const prefix = (node: Node) => node.instance.subnet.split(".").slice(0, 2).join(".") + ".";
    for (const node of nodes) {
      const sandbox = of(node)[0]!;
      const address = (await sandbox.commands.run(`python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("${gatewayOf(node)}", 9)); print(s.getsockname()[0])'`)).stdout.trim();
      expect(address.startsWith(prefix(node)), `${address} on ${node.instance.subnet}`).toBe(true);
    }
    const listed = (await Sandbox.list({ ...opts(a), limit: 100 }).nextItems()).map((s) => s.sandboxId);
    expect(listed.sort()).toEqual(created.map((s) => s.sandboxId).sort());
    // Up to three a node go on to the next tests (a lighter load on this VM); the others are killed through A.
    for (const node of nodes) {
      const [keep, drop] = [of(node).slice(0, 3), of(node).slice(3)];
      on.set(node.name, keep);
      for (const s of drop) {
        expect(await Sandbox.kill(s.sandboxId, opts(a))).toBe(true);
        made.delete(s.sandboxId);
      }
    }
    const recorded = async () => [...(await owners(created.map((s) => s.sandboxId))).entries()].filter(([, r]) => r !== undefined).map(([id]) => id).sort();
    await until("the killed ones' owner records removed", async () => JSON.stringify(await recorded()) === JSON.stringify([...made].sort()), 10_000);
  });

  it("commands, streamed output, files, a port and an upgrade reach sandboxes on B and C through A", { timeout: 180_000 }, async () => {
    for (const node of [b, c]) {
      const target = on.get(node.name)![0]!;
      const viaA = await Sandbox.connect(target.sandboxId, { ...opts(a), timeoutMs: 600_000 });
      expect((await viaA.commands.run(`echo on ${node.name}`)).stdout).toBe(`on ${node.name}\n`);
      // Output streams as it is made: the first line arrives well before the command ends.
      const arrivals: number[] = [];
      const began = Date.now();
      const streamed = await viaA.commands.run("for i in 1 2 3; do echo line$i; sleep 0.5; done", { onStdout: () => void arrivals.push(Date.now() - began) });
      expect(streamed.stdout).toBe("line1\nline2\nline3\n");
      expect(arrivals.length).toBeGreaterThanOrEqual(2);
      expect(Date.now() - began - arrivals[0]!).toBeGreaterThan(700);

      await viaA.files.write("/home/user/who-asks.py", WHO_ASKS);
      expect(await viaA.files.read("/home/user/who-asks.py")).toBe(WHO_ASKS);
      await viaA.files.write("/home/user/upgrade-echo.py", UPGRADE_ECHO);
      await viaA.commands.run("python3 /home/user/who-asks.py", { background: true });
      await viaA.commands.run("python3 /home/user/upgrade-echo.py", { background: true });
      // The port through A by Host: served by the sandbox to its own node's gateway, never to A (A cannot reach it).
      let asked = { status: 0, body: "" };
      for (let i = 0; i < 100 && asked.status !== 200; i++) {
        asked = await httpVia(a, { host: `8000-${target.sandboxId}.burrow.localhost:${a.port}` }).catch(() => ({ status: 0, body: "" }));
        if (asked.status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      expect(asked).toEqual({ status: 200, body: gatewayOf(node) });
      expect(await httpVia(a, { "E2b-Sandbox-Id": target.sandboxId, "E2b-Sandbox-Port": "8000" })).toEqual({ status: 200, body: gatewayOf(node) });
      let echoed = { status: 0, body: "" };
      for (let i = 0; i < 50 && echoed.status !== 101; i++) {
        echoed = await httpVia(a, { host: `8001-${target.sandboxId}.burrow.localhost:${a.port}`, connection: "Upgrade", upgrade: "echo" }, `hello ${node.name}`).catch(() => ({ status: 0, body: "" }));
        if (echoed.status !== 101) await new Promise((r) => setTimeout(r, 200));
      }
      expect(echoed).toEqual({ status: 101, body: `HELLO ${node.name.toUpperCase()}` });
    }
  });

  it("a sandbox's own connections leave through its node's namespace: routed and masqueraded there onto the LAN", { timeout: 60_000 }, async () => {
    // A server of the test's on the host's LAN address, saying who connected: each node's LAN address, which only
    // that node's forwarding and NAT (in its namespace, its own ip_forward) give a sandbox's connection.
    const server = createServer((req, res) => res.end(req.socket.remoteAddress?.replace(/^::ffff:/, "")));
    await new Promise<void>((resolve) => server.listen(0, lan!.hostAddress, resolve));
    try {
      const { port } = server.address() as AddressInfo;
      for (const node of nodes) {
        const sandbox = await Sandbox.connect(on.get(node.name)![0]!.sandboxId, { ...opts(a), timeoutMs: 600_000 });
        const fetched = await sandbox.commands.run(`python3 -c 'import urllib.request; print(urllib.request.urlopen("http://${lan!.hostAddress}:${port}/", timeout=10).read().decode())'`);
        expect(fetched.stdout.trim(), node.name).toBe(node.instance.host);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("its resolver and egress judge work in its namespace: an allowed name is reached (judged), a denied one never asked", { timeout: 60_000 }, async () => {
    const sandbox = await create("base", { network: { allowOut: ["lan-allowed.test"], denyOut: [ALL_TRAFFIC] } });
    const ownerName = (await owners([sandbox.sandboxId])).get(sandbox.sandboxId)?.node;
    const owner = nodes.find((n) => n.name === ownerName)!;
    const get = async (url: string) => (await sandbox.commands.run(`curl -s -m 5 -w ' %{http_code}' ${url} 2>&1 || true`)).stdout.trim();
    // Resolved by the owner's resolver (asking the LAN's DNS server), judged by the owner's egress judge and
    // forwarded from the owner's namespace: with ALL_TRAFFIC denied, nothing else could reach the LAN.
    expect(await get("http://lan-allowed.test/")).toBe(`hello ${owner.instance.host} 200`);
    expect(services!.queries()).toContain("lan-allowed.test");
    expect(await get("http://lan-denied.test/")).toBe("000");
    expect(services!.queries()).not.toContain("lan-denied.test");
    // The same address by its IP (the resolver gave it for the allowed name, so the judge reads this Host and asks
    // the owner): refused by ALL_TRAFFIC, reset at both ends.
    expect(await get(`http://${lan!.hostAddress}/`)).toBe("000");
    expect(await Sandbox.kill(sandbox.sandboxId, opts(a))).toBe(true);
    made.delete(sandbox.sandboxId);
  });

  it("a template built through A is started on C while A and B are cordoned, which get no creates", { timeout: 600_000 }, async () => {
    const template = Template().fromTemplate("base").runCmd(`echo 'built on node A' > /etc/lan.txt`, { user: "root" });
    const info = await Template.build(template, TEMPLATE, opts(a));
    // Built on A: the node that answered the build has it in its own record, and has published it.
    await until("A lists the template as its own", async () => (await nodesSeenBy(a)).find((n) => n.name === "node-a")?.load.templates?.includes(info.templateId) === true, 60_000);
    await until("the template is published", () => published(info.templateId), 120_000);
    for (const name of ["node-a", "node-b"]) expect((await nodeApi(`/burrow/v1/nodes/${name}/cordon`, "POST")).status).toBe(200);
    try {
      await until("C sees A and B cordoned", async () => (await nodesSeenBy(c)).filter((n) => n.cordoned).length === 2);
      const fromTemplate = [await create(TEMPLATE), await create(TEMPLATE)];
      const base = await create();
      const placed = await owners([...fromTemplate, base].map((s) => s.sandboxId));
      expect([...placed.values()].map((r) => r?.node)).toEqual(["node-c", "node-c", "node-c"]);
      for (const s of fromTemplate) expect((await s.commands.run("cat /etc/lan.txt")).stdout).toBe("built on node A\n");
      on.get("node-c")!.push(...fromTemplate, base);
    } finally {
      for (const name of ["node-a", "node-b"]) await nodeApi(`/burrow/v1/nodes/${name}/uncordon`, "POST");
    }
  });

  it("one NATS server of three killed: every record is there, every sandbox answers, a new one is recorded", { timeout: 180_000 }, async () => {
    const killedAt = Date.now();
    await nats!.kill(2);
    try {
      // JetStream elects new leaders for what the killed server led; meanwhile heartbeats and reads may stall. Once
      // every node has written a heartbeat since, the cluster has gone on.
      await until("three heartbeats written after the kill", async () => {
        const seen = await nodesSeenBy(a).catch(() => []);
        return seen.length === 3 && seen.every((n) => n.status === "up" && Date.parse(n.lastSeenAt) > killedAt);
      }, 60_000);
      let records: Awaited<ReturnType<typeof owners>> = new Map();
      await until("the owner records read", async () => (records = await owners(made).catch(() => new Map())).size === made.size, 30_000);
      expect([...records].filter(([, r]) => r === undefined || r.lostAt !== undefined).map(([id]) => id)).toEqual([]);
      for (const node of nodes) {
        const one = await Sandbox.connect(on.get(node.name)![0]!.sandboxId, { ...opts(a), timeoutMs: 600_000 });
        expect((await one.commands.run("echo still")).stdout).toBe("still\n");
      }
      const fresh = await create();
      const node = (await owners([fresh.sandboxId])).get(fresh.sandboxId)?.node ?? "(none)";
      expect(node).toMatch(/^node-[abc]$/);
      on.get(node)!.push(fresh);
      const listed = (await Sandbox.list({ ...opts(a), limit: 100 }).nextItems()).map((s) => s.sandboxId);
      expect(listed.sort()).toEqual([...made].sort());
    } finally {
      await nats!.launchRest();
    }
  });

  it("node C's processes SIGKILLed: its sandboxes reported lost within the window, creates go elsewhere; back, it takes them back once", { timeout: 300_000 }, async () => {
    const lostOnes = on.get("node-c")!.map((s) => s.sandboxId);
    expect(lostOnes.length).toBeGreaterThan(0);
    const events = new LifecycleEvents(url(a), API_KEY);
    await events.ready;
    try {
      // Every process of node C's (its server and the helpers beside it in its namespace), as a machine lost; its
      // sandboxes, in namespaces of their own, live on.
      const pids = lan!.pidsIn(c.instance.netns);
      expect(pids).toContain(c.server!.child.pid);
      const exited = new Promise((r) => c.server!.child.once("exit", r));
      for (const pid of pids) process.kill(pid, "SIGKILL");
      await exited;
      const killedAt = Date.now();
      process.stdout.write(`node C: ${pids.length} processes SIGKILLed\n`);
      await until("a lost event for each of C's sandboxes", () => lostOnes.every((id) => events.of("lost", id) > 0), DOWN_AFTER_MS + 20_000);
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(DOWN_AFTER_MS - 1_000);
      await expect(Sandbox.getInfo(lostOnes[0]!, opts(a))).rejects.toBeInstanceOf(SandboxNotFoundError);

      const meanwhile = [await create(), await create(), await create()];
      const placed = await owners(meanwhile.map((s) => s.sandboxId));
      expect([...placed.values()].every((r) => r?.node === "node-a" || r?.node === "node-b"), JSON.stringify([...placed])).toBe(true);

      await startCliNode(c, nats!.urls[2]!, settings(c));
      await until("C's records taken back", async () => [...(await owners(lostOnes)).values()].every((r) => r?.node === "node-c" && r.lostAt === undefined), 60_000);
      // A learns that the sandbox is back from C's recovery event, a moment after the record: until then it is gone there.
      await until("A knows C's sandbox again", () => Sandbox.getInfo(lostOnes[0]!, opts(a)).then(() => true, () => false), 30_000);
      const back = await Sandbox.connect(lostOnes[0]!, { ...opts(a), timeoutMs: 600_000 });
      await until("C's sandbox reachable through A", () => back.isRunning(), 30_000);
      expect((await back.commands.run("echo back")).stdout).toBe("back\n");
      const listed = (await Sandbox.list({ ...opts(a), limit: 100 }).nextItems()).map((s) => s.sandboxId);
      for (const id of lostOnes) expect(listed.filter((l) => l === id)).toHaveLength(1);
      expect(listed.sort()).toEqual([...made].sort());
      expect(c.server!.output().match(/sandbox recovered/g) ?? []).toHaveLength(lostOnes.length);
      for (const id of lostOnes) expect(events.of("lost", id)).toBe(1);
    } finally {
      events.stop();
    }
  });
});
