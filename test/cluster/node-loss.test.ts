// Node loss and return, with the real CLI: two Burrow nodes on a 3-server NATS JetStream cluster on the loopback, the
// official e2b SDK pointed at node A and a sandbox on node B. B's server process is SIGKILLed (its sandbox lives on):
// within the down window A reports the sandbox lost once (a `lost` lifecycle event on A's stream, the owner record
// kept and marked lost), GET through A answers 404 naming the lost node, and commands through A fail at once with the
// SDK's SandboxNotFoundError. B restarted on the same state directory takes the sandbox back: one record, naming B
// again, one `recovered` report, and commands through A reach it again; a second sandbox, killed through A while it
// was lost, is ended by B on its return instead.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox, SandboxNotFoundError } from "e2b";
import { NatsCluster } from "./nats-cluster.js";
import { LifecycleEvents, until } from "./lifecycle-events.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { stopServerProcess } from "../helpers/server-process.js";
import { cliNodes, cordonNode, readOwnerRecord, sdkOptions, startCliNode, startCliNodes, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const DOWN_AFTER_MS = 4_000;

describe("a node lost and back", () => {
  let nats: NatsCluster;
  const nodes = cliNodes("los", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const opts = (node: Node) => sdkOptions(node, API_KEY);
  const settings = { apiKey: API_KEY, downAfterMs: DOWN_AFTER_MS };
  const ownerRecord = (sandboxId: string) => readOwnerRecord(nats.urls, sandboxId);
  let sandboxId = "";
  let killedId = "";

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    await startCliNodes(nodes, nats.urls, settings);
  });

  afterAll(async () => {
    for (const id of [sandboxId, killedId]) if (id) await Sandbox.kill(id, opts(b)).catch(() => undefined);
    await tearDownServers(nodes, { after: [() => nats?.stop()] });
  });

  it("reports a SIGKILLed node's sandbox lost once, answers not found for it, and takes it back when the node returns", async () => {
    // A cordoned while the sandbox is made: wherever placement would put it, it lands on B.
    const cordon = (what: "cordon" | "uncordon") => cordonNode(b, "node-a", what, API_KEY);
    await until("node A known to B", async () => (await cordon("cordon")).ok, 20_000);
    const [onB, toKill] = await Promise.all([
      Sandbox.create("base", { ...opts(b), timeoutMs: 600_000 }),
      Sandbox.create("base", { ...opts(b), timeoutMs: 600_000 }),
    ]).finally(() => cordon("uncordon"));
    sandboxId = onB.sandboxId;
    killedId = toKill.sandboxId;
    expect(await ownerRecord(killedId)).toMatchObject({ node: "node-b" });
    const viaA = await Sandbox.connect(sandboxId, { ...opts(a), timeoutMs: 600_000 });
    expect((await viaA.commands.run("echo before")).stdout.trim()).toBe("before");
    expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-b" });

    const eventsA = new LifecycleEvents(a.server!.url, API_KEY);
    await eventsA.ready;
    try {
      // B's server is gone; its sandbox's processes are not (they outlive the server, as after any crash).
      await stopServerProcess(b.server!, "SIGKILL");
      const killedAt = Date.now();
      await until("a lost event through A", () => eventsA.of("lost", sandboxId) > 0, DOWN_AFTER_MS + 20_000);
      const lostAfterMs = Date.now() - killedAt;
      expect(lostAfterMs).toBeGreaterThanOrEqual(DOWN_AFTER_MS - 1_000);

      const record = await ownerRecord(sandboxId);
      expect(record).toMatchObject({ node: "node-b" });
      expect(record?.lostAt).toEqual(expect.any(String));

      // The REST API: 404 in E2B's error shape, saying the node was lost; the SDK's getInfo: SandboxNotFoundError.
      const got = await fetch(`${a.server!.url}/sandboxes/${sandboxId}`, { headers: { "X-API-KEY": API_KEY } });
      expect(got.status).toBe(404);
      const body = (await got.json()) as { code: number; message: string };
      expect(body.code).toBe(404);
      expect(body.message).toMatch(/node-b.*lost/);
      await expect(Sandbox.getInfo(sandboxId, opts(a))).rejects.toBeInstanceOf(SandboxNotFoundError);
      // Without a key A knows, nothing about a lost sandbox is said nor kept (401 as the API answers).
      for (const headers of [{}, { "X-API-KEY": `e2b_${"0".repeat(40)}` }] as Array<Record<string, string>>) {
        expect((await fetch(`${a.server!.url}/sandboxes/${killedId}`, { method: "DELETE", headers })).status).toBe(401);
        expect((await fetch(`${a.server!.url}/sandboxes/${killedId}`, { headers })).status).toBe(401);
      }
      expect(await ownerRecord(killedId)).not.toHaveProperty("killedAt");
      // A kill through A is answered as for a gone sandbox (false) and kept for B's return.
      expect(await Sandbox.kill(killedId, opts(a))).toBe(false);
      expect(await ownerRecord(killedId)).toMatchObject({ node: "node-b", lostAt: expect.any(String), killedAt: expect.any(String) });
      // Lists through A leave it out ("lost" is no E2B state; the down node is not asked).
      expect((await Sandbox.list(opts(a)).nextItems()).map((s) => s.sandboxId)).not.toContain(sandboxId);

      // Commands through A: not found at once, not a timeout or a connection error.
      const started = Date.now();
      const failure = await viaA.commands.run("echo during", { requestTimeoutMs: 30_000 }).then(() => undefined, (err: unknown) => err);
      expect(failure).toBeInstanceOf(SandboxNotFoundError);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await viaA.isRunning()).toBe(false);

      // Reported once: a few more heartbeats bring no second report.
      await new Promise((r) => setTimeout(r, 2_000));
      expect(eventsA.of("lost", sandboxId)).toBe(1);
      expect(eventsA.of("lost", killedId)).toBe(1);

      // B back on the same state directory: the sandbox is B's again, reachable through A.
      await startCliNode(b, nats.urls[1]!, settings);
      await until("the record taken back", async () => (await ownerRecord(sandboxId))?.lostAt === undefined, 30_000);
      expect(await ownerRecord(sandboxId)).toEqual(expect.objectContaining({ node: "node-b" }));
      expect(await ownerRecord(sandboxId)).not.toHaveProperty("lostAt");
      await until("the sandbox reachable through A", () => viaA.isRunning(), 30_000);
      expect((await viaA.commands.run("echo after")).stdout.trim()).toBe("after");
      const info = await Sandbox.getInfo(sandboxId, opts(a));
      expect(info.sandboxId).toBe(sandboxId);
      const listed = (await Sandbox.list(opts(a)).nextItems()).map((s) => s.sandboxId);
      expect(listed.filter((id) => id === sandboxId)).toHaveLength(1);
      expect(b.server!.output().match(/sandbox recovered/g) ?? []).toHaveLength(1);
      // The one killed while lost: ended by B, its record gone, not found through A.
      expect(await ownerRecord(killedId)).toBeUndefined();
      await expect(Sandbox.getInfo(killedId, opts(a))).rejects.toBeInstanceOf(SandboxNotFoundError);
      expect(listed).not.toContain(killedId);
      expect(eventsA.of("lost", sandboxId)).toBe(1);
    } finally {
      eventsA.stop();
    }
  });
});
