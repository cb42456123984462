// The cluster's shared state on a real nats-server with JetStream: node records (join, heartbeat, down after the
// window, a cordon kept across heartbeats and rejoins) and sandbox ownership (a create never takes another node's
// record, a node removes only its own, the mirror follows writes of other nodes). A stall of the store (the server
// stopped) or of one node's connection (a request lost with it) does not make a live node look down.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { pino } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { followReconnects, openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { Membership } from "../src/cluster/membership.js";
import { decodeNodeRecord, NODE_RECORD_VERSION } from "../src/cluster/node-record.js";
import { SandboxOwners } from "../src/cluster/sandbox-owners.js";
import { resolveClusterConfig } from "../src/cluster/cluster-config.js";
import { syncOwnership } from "../src/cluster/ownership-sync.js";
import { SandboxEvents } from "../src/lifecycle/events.js";

const logger = pino({ level: "silent" });

const load = async () => ({ freeMemoryBytes: 1, runningSandboxes: 0, poolFill: [{ template: "base", ready: 1, target: 2 }] });

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A loopback TCP relay to a port that can hold what clients send (unsent, in its socket) and drop every connection. */
class HoldingRelay {
  readonly #sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly port: number) {}

  static async open(targetPort: number): Promise<HoldingRelay> {
    let relay: HoldingRelay | undefined;
    const server = createServer((client) => relay!.#relay(client, targetPort));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    relay = new HoldingRelay(server, (server.address() as AddressInfo).port);
    return relay;
  }

  #relay(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        this.#sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** What clients send from now on is not passed on. */
  hold(): void {
    for (const s of this.#sockets) s.unpipe();
  }

  /** Drop every connection (what was held is lost); new ones are relayed again. */
  cut(): void {
    for (const s of this.#sockets) s.destroy();
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}

describe("cluster state in JetStream KV", () => {
  let nats: NatsServerFixture;
  const conns: ClusterKv[] = [];
  const closers: Array<() => unknown> = [];

  beforeAll(async () => {
    nats = await NatsServerFixture.start();
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    for (const c of conns) await c.close();
    await nats?.stop();
  });

  async function connection(name: string): Promise<ClusterKv> {
    const kv = await openClusterKv([`nats://${nats.url}`], name, 1);
    conns.push(kv);
    return kv;
  }

  it("nodes join, beat, go down after the window, and keep a cordon across heartbeats and a rejoin", async () => {
    const [kvA, kvB] = [await connection("a"), await connection("b")];
    const opts = { version: "0.1.0", heartbeatMs: 100, downAfterMs: 600, load, logger };
    const a = await Membership.open({ ...opts, kv: kvA.nodes, nodeName: "a" });
    const b = await Membership.open({ ...opts, kv: kvB.nodes, nodeName: "b" });
    closers.push(() => a.close(), () => b.close());
    await a.join("http://127.0.0.1:1");
    await b.join("http://127.0.0.1:2");
    await until(() => a.list().filter((n) => n.status === "up").length === 2);
    expect(a.node("b")).toMatchObject({ name: "b", apiUrl: "http://127.0.0.1:2", version: "0.1.0", cordoned: false, v: NODE_RECORD_VERSION, load: { poolFill: [{ template: "base", ready: 1, target: 2 }] } });

    // Cordoned from a: b's heartbeats (read-modify-write with a revision check) keep it.
    const cordoned = await a.setCordoned("b", true);
    expect(cordoned.cordoned).toBe(true);
    const revision = cordoned.revision;
    await until(() => (b.node("b")?.revision ?? 0) > revision + 3);
    expect(b.node("b")?.cordoned).toBe(true);
    expect(a.node("b")?.cordoned).toBe(true);

    // b stops beating: down after the window, as a crash would look.
    await b.close();
    await until(() => a.node("b")?.status === "down", 5_000);
    expect(a.node("a")?.status).toBe("up");

    // b comes back: up again, still cordoned until uncordoned.
    const again = await Membership.open({ ...opts, kv: kvB.nodes, nodeName: "b" });
    closers.push(() => again.close());
    await again.join("http://127.0.0.1:3");
    await until(() => a.node("b")?.status === "up" && a.node("b")?.apiUrl === "http://127.0.0.1:3");
    expect(a.node("b")?.cordoned).toBe(true);
    expect((await a.setCordoned("b", false)).cordoned).toBe(false);
    await expect(a.setCordoned("nobody", true)).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("a stall of the store is not a node's silence: after it, every other node gets a whole window again", async () => {
    const [kvA, kvB] = [await connection("sa"), await connection("sb")];
    const opts = { version: "0.1.0", heartbeatMs: 100, downAfterMs: 1_500, load, logger };
    const a = await Membership.open({ ...opts, kv: kvA.nodes, nodeName: "sa" });
    const b = await Membership.open({ ...opts, kv: kvB.nodes, nodeName: "sb" });
    closers.push(() => a.close());
    await a.join("http://127.0.0.1:1");
    await b.join("http://127.0.0.1:2");
    await until(() => a.node("sb")?.status === "up");
    // b stops beating (a crash), and the store stalls for twice the window right after.
    await b.close();
    nats.pause(true);
    try {
      await new Promise((r) => setTimeout(r, 3_000));
    } finally {
      nats.pause(false);
    }
    const before = a.node("sa")!.revision;
    await until(() => (a.node("sa")?.revision ?? 0) > before, 10_000);
    // b's last heartbeat is older than the window, but the stall held everyone's: not down yet...
    expect(a.node("sb")?.status).toBe("up");
    // ...until a whole window has passed with a's own heartbeats stored.
    await until(() => a.node("sb")?.status === "down", 10_000);
  });

  it("a heartbeat is written at once on a new connection, not after the request lost with the old one", async () => {
    // The node reaches NATS through a loopback relay that can hold what the node sends and then drop the connection:
    // a request sent just before a connection dies is never answered (nats.js times it out after 5 s).
    const relay = await HoldingRelay.open(nats.port);
    closers.push(() => relay.close());
    const kv = await openClusterKv([`nats://127.0.0.1:${relay.port}`], "rc", 1);
    conns.push(kv);
    const reader = await connection("rc-reader"); // straight to NATS: its reads are not cut
    const lines: string[] = [];
    const captured = pino({ level: "warn" }, { write: (line: string) => void lines.push(line) });
    const m = await Membership.open({ version: "0.1.0", heartbeatMs: 100, downAfterMs: 10_000, load, logger: captured, kv: kv.nodes, nodeName: "rc" });
    closers.push(() => m.close());
    await m.join("http://127.0.0.1:1");
    followReconnects(kv.nc, () => m.beatNow());
    relay.hold();
    await new Promise((r) => setTimeout(r, 500)); // a heartbeat is sent meanwhile, and held
    const cutAt = Date.now();
    relay.cut();
    let storedWhileStale: boolean | undefined;
    await until(async () => {
      const stale = lines.some((l) => l.includes("cluster heartbeat failed"));
      const entry = await reader.nodes.get("rc");
      const heartbeatAt = entry?.operation === "PUT" ? Date.parse(decodeNodeRecord(entry.value).heartbeatAt) : 0;
      if (heartbeatAt > cutAt) storedWhileStale ??= !stale;
      return storedWhileStale !== undefined && stale;
    }, 20_000);
    expect(storedWhileStale).toBe(true);
  });

  it("a create never takes another node's record and a node removes only its own", async () => {
    const [kv1, kv2] = [await connection("n1"), await connection("n2")];
    const n1 = await SandboxOwners.open(kv1, "n1", logger);
    const n2 = await SandboxOwners.open(kv2, "n2", logger);
    closers.push(() => n1.close(), () => n2.close());

    await n1.claim("sbx1");
    await n1.claim("sbx1"); // idempotent for its owner
    const refused = await n2.claim("sbx1").then(() => undefined, (err: unknown) => err);
    expect(refused).toBeInstanceOf(BurrowError);
    expect(refused).toMatchObject({ code: Code.AlreadyExists, reason: "sandbox_owned_elsewhere" });
    expect(await n2.lookup("sbx1")).toBe("n1");

    await n2.release("sbx1");
    expect((await kv1.owners.get("sbx1"))?.operation).toBe("PUT");
    // n2's mirror follows n1's writes through the watch, no reads needed.
    await n1.claim("sbx2");
    await until(() => n2.cached("sbx2") === "n1");
    await n1.release("sbx2");
    await until(() => n2.cached("sbx2") === undefined);
    expect(await n2.lookup("sbx2")).toBeUndefined();
    // Released, the id is free for the next claim.
    await n2.claim("sbx2");
    expect(await n1.lookup("sbx2")).toBe("n2");
    expect(await n2.mine()).toEqual(["sbx2"]);
  });

  it("a node claims what it has at start, drops its stale records, and follows created and killed events", async () => {
    const kv = await connection("n3");
    // Records a previous run of n3 left: one for a sandbox it still has, one for a sandbox gone since.
    const before = await SandboxOwners.open(kv, "n3", logger);
    await before.claim("kept1");
    await before.claim("gone1");
    before.close();

    const owners = await SandboxOwners.open(kv, "n3", logger);
    closers.push(() => owners.close());
    const events = new SandboxEvents(logger);
    const stop = await syncOwnership(owners, () => ["kept1", "paused1"], events, logger);
    closers.push(stop);
    expect(await owners.mine()).toEqual(["kept1", "paused1"]);

    const event = { templateId: "base", metadata: {}, timestamp: new Date() };
    events.emit({ ...event, type: "created", sandboxId: "forked1" });
    await until(async () => (await owners.lookup("forked1")) === "n3");
    events.emit({ ...event, type: "paused", sandboxId: "forked1" });
    events.emit({ ...event, type: "killed", sandboxId: "kept1", reason: "api" });
    events.emit({ ...event, type: "timed_out", sandboxId: "paused1", reason: "timeout" });
    await until(async () => (await owners.mine()).join() === "forked1");
  });

  it("the config: no servers, no cluster; bad names and windows refused", () => {
    expect(resolveClusterConfig(undefined, {})).toBeNull();
    expect(resolveClusterConfig({ nodeName: "n1" }, {})).toBeNull();
    expect(resolveClusterConfig(undefined, { BURROW_CLUSTER: "nats://127.0.0.1:4222,nats://127.0.0.1:4223", BURROW_NODE_NAME: "n1" })).toEqual({
      servers: ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"],
      nodeName: "n1",
      advertiseUrl: null,
      heartbeatMs: 3000,
      downAfterMs: 15000,
      replicas: 2,
      moveMaxMB: 10240,
    });
    const resolved = resolveClusterConfig({ servers: ["nats://h:1"], nodeName: "n1", advertiseUrl: "http://10.0.0.1:3000/" }, {});
    expect(resolved?.advertiseUrl).toBe("http://10.0.0.1:3000");
    expect(resolveClusterConfig(resolved, {})).toEqual(resolved);
    expect(() => resolveClusterConfig({ servers: ["nats://h:1"], nodeName: "bad.name" }, {})).toThrow(/node name/);
    expect(() => resolveClusterConfig({ servers: ["http://h:1"], nodeName: "n1" }, {})).toThrow(/nats:/);
    expect(() => resolveClusterConfig({ servers: ["nats://h:1"], nodeName: "n1" }, { BURROW_CLUSTER_DOWN_AFTER_MS: "1000" })).toThrow(/must exceed/);
    expect(() => resolveClusterConfig({ servers: ["nats://h:1"], nodeName: "n1" }, { BURROW_CLUSTER_HEARTBEAT_MS: "x" })).toThrow(/BURROW_CLUSTER_HEARTBEAT_MS/);
    expect(resolveClusterConfig({ servers: ["nats://h:1"], nodeName: "n1" }, { BURROW_CLUSTER_REPLICAS: "3" })?.replicas).toBe(3);
    expect(() => resolveClusterConfig({ servers: ["nats://h:1"], nodeName: "n1", replicas: 6 }, {})).toThrow(/at most 5/);
  });
});
