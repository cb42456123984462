// Sandboxes that move between nodes, with the real CLI: two Burrow nodes on a 3-server NATS JetStream cluster on the
// loopback and the official e2b SDK. A sandbox on A with a file written is paused to the filesystem and published
// (its owner record says `movable`); A's server is SIGKILLed; once A is reported lost, a connect with another team's
// key takes nothing over, nor does one while the archive is corrupt (refused while it streams, nothing left on B);
// `Sandbox.connect` through B then takes it over and resumes it on B — same id, same envd token (the SDK's handle works), its file there — with one
// `moved` event; A restarted on its state directory removes its copy and does not take the sandbox back. Then
// `burrow node drain node-a --move` moves a running sandbox of A to B: the SDK handle made through A keeps working
// (through A's forwarder) with its files, the report names it moved, and A has no copy left.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { connect } from "@nats-io/transport-node";
import { Objm } from "@nats-io/obj";
import { NatsCluster } from "./nats-cluster.js";
import { LifecycleEvents, until } from "./lifecycle-events.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { stopServerProcess } from "../helpers/server-process.js";
import { runBurrow } from "../cli/run-burrow.js";
import { cliNodes, cordonNode, createTeam, nodeUrl as url, readOwnerRecord, sdkOptions, startCliNode, startCliNodes, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const DOWN_AFTER_MS = 4_000;

describe("sandboxes that move between nodes", () => {
  let nats: NatsCluster;
  const nodes = cliNodes("mov", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const opts = (node: Node) => sdkOptions(node, API_KEY);
  const settings = { apiKey: API_KEY, downAfterMs: DOWN_AFTER_MS };
  const ownerRecord = (sandboxId: string) => readOwnerRecord(nats.urls, sandboxId);
  const cordon = (via: Node, node: string, what: "cordon" | "uncordon") => cordonNode(via, node, what, API_KEY);
  /** A sandbox made on A: B cordoned meanwhile, wherever placement would put it. */
  const createOnA = async () => {
    await until("node B known to A", async () => (await cordon(a, "node-b", "cordon")).ok, 20_000);
    try {
      return await Sandbox.create("base", { ...opts(a), timeoutMs: 600_000 });
    } finally {
      await cordon(a, "node-b", "uncordon");
    }
  };
  const sandboxes: string[] = [];

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    await startCliNodes(nodes, nats.urls, settings);
  });

  afterAll(async () => {
    for (const id of sandboxes) await Sandbox.kill(id, opts(b)).catch(() => undefined);
    await tearDownServers(nodes, { after: [() => nats?.stop()] });
  });

  it("resumes a filesystem pause of a lost node on another node, and the node back does not take it back", { timeout: 300_000 }, async () => {
    const sandbox = await createOnA();
    sandboxes.push(sandbox.sandboxId);
    const { sandboxId } = sandbox;
    expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-a" });
    await sandbox.files.write("/home/user/moved.txt", "written on A");
    expect(await sandbox.pause({ keepMemory: false })).toBe(true);
    await until("the paused sandbox published", async () => (await ownerRecord(sandboxId))?.movable !== undefined, 60_000);

    // A key of another team, known to B.
    const otherKey = (await createTeam(a, API_KEY, `other-${randomBytes(3).toString("hex")}`)).adminKey.key;
    await until("B knows the other team's key", async () => (await fetch(`${url(b)}/sandboxes`, { headers: { "X-API-KEY": otherKey } })).status === 200);

    const eventsB = new LifecycleEvents(url(b), API_KEY);
    await eventsB.ready;
    try {
      await stopServerProcess(a.server!, "SIGKILL");
      await until("A reported lost", async () => (await ownerRecord(sandboxId))?.lostAt !== undefined, DOWN_AFTER_MS + 30_000);

      // Another team's key takes nothing over.
      await expect(Sandbox.connect(sandboxId, { ...opts(b), apiKey: otherKey, timeoutMs: 600_000 })).rejects.toThrow();
      expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-a", lostAt: expect.any(String) });
      // A corrupt archive is refused while it streams: the sandbox stays A's, nothing is left on B.
      const digest = (await ownerRecord(sandboxId))!.movable!;
      const nc = await connect({ servers: nats.urls });
      try {
        const store = await new Objm(nc).open("burrow_sandbox_layers");
        const name = `${sandboxId}.${digest}`;
        const original = await store.getBlob(name);
        expect(original?.length).toBeGreaterThan(0);
        await store.putBlob({ name }, randomBytes(original!.length));
        const refused = await fetch(`${url(b)}/sandboxes/${sandboxId}/connect`, {
          method: "POST",
          headers: { "X-API-KEY": API_KEY, "content-type": "application/json" },
          body: JSON.stringify({ timeout: 600 }),
        });
        expect(refused.status).toBeGreaterThanOrEqual(500);
        expect(((await refused.json()) as { message: string }).message).toMatch(/is corrupt/);
        expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-a", lostAt: expect.any(String) });
        expect(existsSync(join(b.instance.stateDir, "sandboxes", sandboxId))).toBe(false);
        await store.putBlob({ name }, original!);
      } finally {
        await nc.close();
      }

      const resumed = await Sandbox.connect(sandboxId, { ...opts(b), timeoutMs: 600_000 });
      expect(resumed.sandboxId).toBe(sandboxId);
      expect(await resumed.files.read("/home/user/moved.txt")).toBe("written on A");
      expect((await resumed.commands.run("echo on B")).stdout.trim()).toBe("on B");
      const record = await ownerRecord(sandboxId);
      expect(record).toMatchObject({ node: "node-b", movedFrom: "node-a" });
      expect(record).not.toHaveProperty("lostAt");
      // Resumed on B: no longer a published pause (a copy taken now would be stale).
      expect(record).not.toHaveProperty("movable");
      await until("a moved event through B", () => eventsB.of("moved", sandboxId) === 1, 10_000);
      expect((await Sandbox.getInfo(sandboxId, opts(b))).state).toBe("running");

      // A back on the same state directory: its copy is removed, the sandbox stays B's and answers through A.
      await startCliNode(a, nats.urls[0]!, settings);
      await until("A's copy removed", () => !existsSync(join(a.instance.stateDir, "sandboxes", sandboxId)), 30_000);
      expect(a.server!.output()).toContain("another node owns the id of a sandbox this node has");
      expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-b" });
      const viaA = await Sandbox.connect(sandboxId, { ...opts(a), timeoutMs: 600_000 });
      expect(await viaA.files.read("/home/user/moved.txt")).toBe("written on A");
      expect((await viaA.commands.run("echo via A")).stdout.trim()).toBe("via A");
      const listed = (await Sandbox.list(opts(a)).nextItems()).map((s) => s.sandboxId);
      expect(listed.filter((id) => id === sandboxId)).toHaveLength(1);
      expect(eventsB.of("moved", sandboxId)).toBe(1);
    } finally {
      eventsB.stop();
    }
  });

  it("drain --move moves a running sandbox to another node: same id, files and SDK handle", { timeout: 300_000 }, async () => {
    const sandbox = await createOnA();
    sandboxes.push(sandbox.sandboxId);
    const { sandboxId } = sandbox;
    await sandbox.files.write("/home/user/drained.txt", "moved by a drain");
    const drained = await runBurrow(["node", "drain", "node-a", "--move", "--timeout", "120", "--json"], {
      env: { ...process.env, E2B_API_KEY: API_KEY, E2B_API_URL: url(a), E2B_SANDBOX_URL: url(a) },
    });
    await cordon(a, "node-a", "uncordon");
    expect(drained.code, drained.stderr + drained.stdout).toBe(0);
    const report = JSON.parse(drained.stdout) as { moved: Array<{ sandboxId: string; node: string }>; paused: string[]; failed: unknown[]; drained: boolean };
    expect(report).toMatchObject({ drained: true, failed: [], paused: [] });
    expect(report.moved).toContainEqual({ sandboxId, node: "node-b" });
    expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-b", movedFrom: "node-a" });
    // The handle made through A: A forwards to B now; the files came along, processes run again.
    expect(await sandbox.files.read("/home/user/drained.txt")).toBe("moved by a drain");
    expect((await sandbox.commands.run("echo still here")).stdout.trim()).toBe("still here");
    expect(await sandbox.isRunning()).toBe(true);
    expect(existsSync(join(a.instance.stateDir, "sandboxes", sandboxId))).toBe(false);
  });
});
