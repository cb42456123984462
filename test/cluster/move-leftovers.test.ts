// Moves that lose nothing and leave nothing, with the real CLI: two Burrow nodes on a 3-server NATS JetStream cluster
// on the loopback and the official e2b SDK, a move limit of 64 MiB (BURROW_CLUSTER_MOVE_MAX_MB).
// - A published sandbox killed: its move record and archive go.
// - A filesystem pause whose writable layer is over the limit is not published; its owner record says why.
// - `burrow node drain node-a --move`: the drained node sends no `killed` for the copy it removes (the sandbox did not
//   end); B sends `moved`.
// - A take-over crashed: A is SIGKILLed and reported lost; a connect through B is cut short by SIGKILL of B while the
//   archive (48 MiB) streams — the sandbox stays A's and movable; then the record as a crash right after B's claim
//   leaves it (B's, movable, moved from A) and B restarted: B keeps the record, and a connect through B resumes the
//   sandbox there with its files. The sandbox is of a custom template deleted (on every node) after it was
//   published: the move holds its layers and still resumes with the template's file.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox, Template } from "e2b";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { NatsCluster } from "./nats-cluster.js";
import { LifecycleEvents, until } from "./lifecycle-events.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { stopServerProcess } from "../helpers/server-process.js";
import type { OwnerRecord } from "../../packages/server/src/cluster/sandbox-owners.js";
import { cliNodes, cordonNode, nodeUrl as url, readOwnerRecord, sdkOptions, startCliNode, startCliNodes, type CliNode as Node, type CliNodeSettings } from "./cli-nodes.js";
import { runBurrow } from "../cli/run-burrow.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const DOWN_AFTER_MS = 4_000;

describe("moves that lose nothing and leave nothing", () => {
  let nats: NatsCluster;
  const nodes = cliNodes("ml", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const opts = (node: Node) => sdkOptions(node, API_KEY);
  const settings: CliNodeSettings = { apiKey: API_KEY, downAfterMs: DOWN_AFTER_MS, env: { BURROW_CLUSTER_MOVE_MAX_MB: "64" } };
  const withNats = async <T>(f: (kvm: Kvm, objm: Objm) => Promise<T>): Promise<T> => {
    const nc = await connect({ servers: nats.urls });
    try {
      return await f(new Kvm(nc), new Objm(nc));
    } finally {
      await nc.close();
    }
  };
  const ownerRecord = (sandboxId: string) => readOwnerRecord(nats.urls, sandboxId);
  const moveRecord = (sandboxId: string) =>
    withNats(async (kvm) => {
      const entry = await (await kvm.open("burrow_sandbox_moves")).get(sandboxId);
      return entry?.operation === "PUT" ? entry.json<{ writable: { digest: string } }>() : undefined;
    });
  const archiveExists = (name: string) =>
    withNats(async (_kvm, objm) => {
      const info = await (await objm.open("burrow_sandbox_layers")).info(name);
      return !!info && !info.deleted;
    });
  const cordon = (via: Node, node: string, what: "cordon" | "uncordon") => cordonNode(via, node, what, API_KEY);
  /** A sandbox made on A: B cordoned meanwhile, wherever placement would put it. */
  const createOnA = async (template = "base") => {
    await until("node B known to A", async () => (await cordon(a, "node-b", "cordon")).ok, 20_000);
    try {
      const sandbox = await Sandbox.create(template, { ...opts(a), timeoutMs: 600_000 });
      sandboxes.push(sandbox.sandboxId);
      return sandbox;
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

  it("a published sandbox killed: its move record and archive go", { timeout: 180_000 }, async () => {
    const sandbox = await createOnA();
    const { sandboxId } = sandbox;
    await sandbox.files.write("/home/user/note.txt", "published");
    expect(await sandbox.pause({ keepMemory: false })).toBe(true);
    await until("the paused sandbox published", async () => (await ownerRecord(sandboxId))?.movable !== undefined, 60_000);
    const digest = (await moveRecord(sandboxId))!.writable.digest;
    expect(await archiveExists(`${sandboxId}.${digest}`)).toBe(true);
    await Sandbox.kill(sandboxId, opts(a));
    await until("its move record removed", async () => (await moveRecord(sandboxId)) === undefined, 20_000);
    await until("its archive removed", async () => !(await archiveExists(`${sandboxId}.${digest}`)), 20_000);
    expect(await ownerRecord(sandboxId)).toBeUndefined();
  });

  it("a pause over the move limit is not published, and its owner record says why", { timeout: 180_000 }, async () => {
    const sandbox = await createOnA();
    const { sandboxId } = sandbox;
    await sandbox.commands.run("head -c 80M /dev/urandom > /home/user/big.bin");
    expect(await sandbox.pause({ keepMemory: false })).toBe(true);
    await until("the owner record says why it is not published", async () => (await ownerRecord(sandboxId))?.moveRefused !== undefined, 60_000);
    const record = await ownerRecord(sandboxId);
    expect(record?.moveRefused).toMatch(/move limit of 64 MiB/);
    expect(record).not.toHaveProperty("movable");
    expect(await moveRecord(sandboxId)).toBeUndefined();
    // Resumed where it is: the reason goes with the pause.
    const resumed = await Sandbox.connect(sandboxId, { ...opts(a), timeoutMs: 600_000 });
    expect((await resumed.commands.run("stat -c %s /home/user/big.bin")).stdout.trim()).toBe(String(80 * 1048576));
    expect(await ownerRecord(sandboxId)).not.toHaveProperty("moveRefused");
    await resumed.kill();
  });

  it("drain --move: the drained node sends no killed for the copy it removes; B sends moved", { timeout: 300_000 }, async () => {
    const sandbox = await createOnA();
    const { sandboxId } = sandbox;
    await sandbox.files.write("/home/user/drained.txt", "moved by a drain");
    const eventsA = new LifecycleEvents(url(a), API_KEY);
    const eventsB = new LifecycleEvents(url(b), API_KEY);
    await Promise.all([eventsA.ready, eventsB.ready]);
    try {
      const drained = await runBurrow(["node", "drain", "node-a", "--move", "--timeout", "120", "--json"], {
        env: { ...process.env, E2B_API_KEY: API_KEY, E2B_API_URL: url(a), E2B_SANDBOX_URL: url(a) },
      });
      await cordon(a, "node-a", "uncordon");
      expect(drained.code, drained.stderr + drained.stdout).toBe(0);
      expect((JSON.parse(drained.stdout) as { moved: unknown[] }).moved).toContainEqual({ sandboxId, node: "node-b" });
      await until("a moved event through B", () => eventsB.of("moved", sandboxId) === 1, 20_000);
      expect(await sandbox.files.read("/home/user/drained.txt")).toBe("moved by a drain");
      // Anything A sent about the move is there by now (a paused from the drain's pause came before it).
      await until("A's stream has the pause", () => eventsA.of("paused", sandboxId) >= 1, 10_000);
      expect(eventsA.of("killed", sandboxId)).toBe(0);
      expect(eventsB.of("killed", sandboxId)).toBe(0);
      expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-b", movedFrom: "node-a" });
      expect(existsSync(join(a.instance.stateDir, "sandboxes", sandboxId))).toBe(false);
      const listed = (await Sandbox.list(opts(a)).nextItems()).map((s) => s.sandboxId);
      expect(listed.filter((id) => id === sandboxId)).toHaveLength(1);
    } finally {
      eventsA.stop();
      eventsB.stop();
    }
  });

  it("a take-over crashed during the fetch or after its claim loses nothing: the sandbox resumes with its files", { timeout: 420_000 }, async () => {
    const name = `moved-tpl-${randomBytes(3).toString("hex")}`;
    const built = await Template.build(Template().fromTemplate("base").runCmd("echo 'from a deleted template' > /etc/moved-template.txt", { user: "root" }), name, opts(a));
    const sandbox = await createOnA(name);
    const { sandboxId } = sandbox;
    const sum = (await sandbox.commands.run("head -c 48M /dev/urandom > /home/user/big.bin && sha256sum /home/user/big.bin | cut -d' ' -f1")).stdout.trim();
    expect(await sandbox.pause({ keepMemory: false })).toBe(true);
    await until("the paused sandbox published", async () => (await ownerRecord(sandboxId))?.movable !== undefined, 120_000);
    const published = (await ownerRecord(sandboxId))!;
    // The template deleted everywhere while the pause is published.
    const deleted = await fetch(`${url(a)}/templates/${name}`, { method: "DELETE", headers: { "X-API-Key": API_KEY } });
    expect(deleted.status).toBeLessThan(300);
    const templateRecord = (id: string) => withNats(async (kvm) => (await (await kvm.open("burrow_templates")).get(id))?.operation === "PUT");
    await until("the template's record removed", async () => !(await templateRecord(built.templateId)), 30_000);
    await stopServerProcess(a.server!, "SIGKILL");
    await until("A reported lost", async () => (await ownerRecord(sandboxId))?.lostAt !== undefined, DOWN_AFTER_MS + 30_000);

    // A take-over through B cut short while the archive streams into B's staging directory.
    // Beside the sandboxes' directories, wherever they are (moved-sandboxes.ts).
    const transfers = join(dirname(realpathSync(join(b.instance.stateDir, "sandboxes"))), "sandbox-transfers");
    const cut = fetch(`${url(b)}/sandboxes/${sandboxId}/connect`, {
      method: "POST",
      headers: { "X-API-KEY": API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ timeout: 600 }),
    }).catch((err: unknown) => err);
    await until("the archive streaming into B", () => existsSync(transfers) && readdirSync(transfers).some((name) => name.startsWith(sandboxId)), 60_000);
    await stopServerProcess(b.server!, "SIGKILL");
    await cut;
    // Before the claim: still A's, lost and movable.
    expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-a", lostAt: expect.any(String), movable: published.movable });

    // What a crash right after B's claim leaves (the claim is written once the archive is verified, and the import
    // follows within milliseconds: no window a test can hit by a signal): the record B's, movable, moved from A.
    await withNats(async (kvm) => {
      const { lostAt: _lostAt, ...rest } = published;
      const claimed: OwnerRecord = { ...rest, node: "node-b", claimedAt: new Date().toISOString(), movedFrom: "node-a" };
      await (await kvm.open("burrow_sandbox_owners")).put(sandboxId, JSON.stringify(claimed));
    });
    await startCliNode(b, nats.urls[1]!, settings);
    // B's start has reconciled its records before it answers; the claimed one is kept, not dropped as stale.
    expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-b", movable: published.movable });
    expect(b.server!.output()).toContain("a take-over of a sandbox was cut short");
    expect(existsSync(transfers) ? readdirSync(transfers) : []).toEqual([]);

    const resumed = await Sandbox.connect(sandboxId, { ...opts(b), timeoutMs: 600_000 });
    expect((await resumed.commands.run("sha256sum /home/user/big.bin | cut -d' ' -f1")).stdout.trim()).toBe(sum);
    expect(await resumed.files.read("/etc/moved-template.txt")).toBe("from a deleted template\n");
    expect(await ownerRecord(sandboxId)).toMatchObject({ node: "node-b", movedFrom: "node-a" });
    expect(await ownerRecord(sandboxId)).not.toHaveProperty("movable");
  });
});
