// What moves leave behind, on a real nats-server (sandbox-moves.ts, reconcile.ts, cluster-templates.ts): a node
// restarted after it claimed a take-over and before it finished keeps the claimed record (movable) instead of
// dropping it as stale — the published archive may be the only copy; the template sweep keeps the layer objects a
// published sandbox stands on after its template is deleted; the moves' sweep removes records of ended sandboxes and
// archives no record names, and keeps what a movable owner record names.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { TemplateStore } from "../../orchestrator/src/templates/template-store.js";
import { openClusterKv, type ClusterKv } from "../src/cluster/cluster-kv.js";
import { ClusterTemplates, LAYERS_STORE, TEMPLATES_BUCKET } from "../src/cluster/cluster-templates.js";
import { MOVE_RECORD_VERSION, encodeMoveRecord, type MoveRecord } from "../src/cluster/move-records.js";
import { reconcileOwnership } from "../src/cluster/reconcile.js";
import { MOVES_BUCKET, SANDBOX_LAYERS_STORE, SandboxMoves } from "../src/cluster/sandbox-moves.js";
import { OWNER_RECORD_VERSION, SandboxOwners } from "../src/cluster/sandbox-owners.js";
import { decodeTemplateRecord } from "../src/cluster/template-records.js";
import { SandboxEvents } from "../src/lifecycle/events.js";

const logger = pino({ level: "silent" });

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function moveRecord(sandboxId: string, digest: string, layers: MoveRecord["boot"]["layers"], publishedAt = new Date(0).toISOString()): MoveRecord {
  return {
    v: MOVE_RECORD_VERSION,
    sandboxId,
    node: "ma",
    publishedAt,
    row: {
      templateId: "tpl",
      alias: null,
      metadata: {},
      cpuCount: 1,
      memoryMB: 256,
      diskSizeMB: 512,
      startedAt: new Date(0).toISOString(),
      envdVersion: "0.2.0",
      envdAccessToken: "token",
      allowInternetAccess: true,
      teamId: null,
      apiKeyPublicId: null,
      mcpServers: null,
      lifecycle: { onTimeout: "kill", autoResume: false } as never,
      timeoutSec: 300,
    },
    boot: { layers, envVars: {}, accessToken: "token" },
    limits: { cpuCount: 1, memoryMB: 256, diskMB: 512, pids: 100 } as never,
    allowInternetAccess: true,
    writable: { digest, size: 1 },
  };
}

describe("what moves leave behind", () => {
  let nats: NatsServerFixture;
  let kvA: ClusterKv;
  let kvB: ClusterKv;
  let ownersA: SandboxOwners;
  let ownersB: SandboxOwners;
  let store: TemplateStore;
  let templates: ClusterTemplates;
  let moves: SandboxMoves;
  const dirs: string[] = [];

  beforeAll(async () => {
    nats = await NatsServerFixture.start();
    kvA = await openClusterKv([`nats://${nats.url}`], "ma", 1);
    kvB = await openClusterKv([`nats://${nats.url}`], "mb", 1);
    ownersA = await SandboxOwners.open(kvA, "ma", logger);
    ownersB = await SandboxOwners.open(kvB, "mb", logger);
    const root = mkdtempSync(join(tmpdir(), "burrow-moveleft-"));
    dirs.push(root);
    store = new TemplateStore(join(root, "templates"), join(root, "state-layers"));
    await store.load();
    mkdirSync(store.layerPath("base-a"));
    await store.save({ templateId: "base", aliases: ["base"], layers: ["base-a"], defaults: { cpuCount: 1, memoryMB: 256 } as never, createdAt: new Date().toISOString() });
    templates = await ClusterTemplates.open({
      nc: kvA.nc,
      replicas: 1,
      nodeName: "ma",
      local: store,
      teams: { ownerOf: () => ({ kind: "template", team: "t" }), adopt: () => undefined, mayUse: () => true },
      deleteLocal: (id) => store.remove(id),
      shipped: new Set(["base"]),
      intervalMs: 100,
      sweepGraceMs: 0,
      logger,
    });
    // Neither the host nor the membership is used by what is tested here (no publish, no take-over).
    moves = await SandboxMoves.open({
      nc: kvA.nc,
      jsm: kvA.jsm,
      replicas: 1,
      nodeName: "ma",
      owners: ownersA,
      membership: undefined as never,
      templates,
      host: undefined as never,
      workDir: join(root, "archives"),
      maxMoveBytes: 1 << 30,
      sweepGraceMs: 60_000,
      logger,
    });
  });

  afterAll(async () => {
    moves?.close();
    await templates?.close();
    ownersA?.close();
    ownersB?.close();
    await kvA?.close();
    await kvB?.close();
    await nats?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("a node back after a take-over it claimed and did not finish keeps the record movable; other stale records go", async () => {
    // What a crash right after the claim leaves: B's record, movable, moved from A; no sandbox on B.
    const kv = await new Kvm(kvB.nc).open("burrow_sandbox_owners");
    const claimed = { v: OWNER_RECORD_VERSION, node: "mb", claimedAt: new Date().toISOString(), movable: "d".repeat(64), movedFrom: "ma", paused: true };
    await kv.put("claimedmove", JSON.stringify(claimed));
    await kv.put("stalerecord", JSON.stringify({ v: OWNER_RECORD_VERSION, node: "mb", claimedAt: new Date().toISOString() }));
    const outcomes = await reconcileOwnership({ owners: ownersB, nodeName: "mb", local: { get: () => undefined, kill: async () => undefined }, events: new SandboxEvents(), logger }, []);
    expect(outcomes.get("claimedmove")).toBe("pending_move");
    expect((await ownersB.read("claimedmove"))?.record).toMatchObject({ node: "mb", movable: "d".repeat(64), movedFrom: "ma" });
    expect(await ownersB.read("stalerecord")).toBeUndefined();
    // Taken over again here: a connect through B finds it takeable.
    await until(() => ownersA.cachedRecord("claimedmove") !== undefined);
    expect(ownersB.cachedRecord("claimedmove")?.node).toBe("mb");
  });

  it("the template sweep keeps the layer objects a published sandbox stands on after its template is deleted", async () => {
    const bucket = await new Kvm(kvA.nc).open(TEMPLATES_BUCKET);
    const objects = await new Objm(kvA.nc).open(LAYERS_STORE);
    const publish = async (templateId: string, layer: string) => {
      mkdirSync(store.layerPath(layer));
      writeFileSync(join(store.layerPath(layer), "file"), `${templateId}\n`);
      await store.save({ templateId, aliases: [], layers: [layer, "base-a"], defaults: { cpuCount: 1, memoryMB: 256 } as never, createdAt: new Date().toISOString(), buildId: `b-${templateId}` });
      await until(async () => (await bucket.get(templateId))?.operation === "PUT");
      return (decodeTemplateRecord((await bucket.get(templateId))!.value).layers[layer] as { digest: string }).digest;
    };
    const held = await publish("heldtpl", "held-layer");
    const free = await publish("freetpl", "free-layer");
    const movesBucket = await new Kvm(kvA.nc).open(MOVES_BUCKET);
    await movesBucket.put("pausedsbx", encodeMoveRecord(moveRecord("pausedsbx", "e".repeat(64), [{ layerId: "held-layer", source: { digest: held, size: 1 } }, { layerId: "base-a", source: { shipped: "base", index: 0 } }], new Date().toISOString())));
    await store.remove("heldtpl");
    await store.remove("freetpl");
    await until(async () => (await bucket.get("heldtpl"))?.operation !== "PUT" && (await bucket.get("freetpl"))?.operation !== "PUT");
    // The free template's object shows that the sweep ran; the held one is still there.
    await until(async () => !(await objects.info(free)) || (await objects.info(free))!.deleted);
    await templates.settled();
    const info = await objects.info(held);
    expect(info && !info.deleted).toBe(true);
    await movesBucket.delete("pausedsbx");
  });

  it("the moves' sweep removes records of ended sandboxes and archives no record names, and keeps movable ones", async () => {
    const movesBucket = await new Kvm(kvA.nc).open(MOVES_BUCKET);
    const archives = await new Objm(kvA.nc).open(SANDBOX_LAYERS_STORE);
    const owners = await new Kvm(kvA.nc).open("burrow_sandbox_owners");
    const old = new Date(Date.now() - 3_600_000).toISOString();
    const put = async (sandboxId: string, digest: string, publishedAt = old) => {
      await movesBucket.put(sandboxId, encodeMoveRecord(moveRecord(sandboxId, digest, [], publishedAt)));
      await archives.putBlob({ name: `${sandboxId}.${digest}` }, new Uint8Array([1, 2, 3]));
    };
    // Ended (no owner record), killed while lost, movable, resumed since (owner record without movable), and fresh.
    await put("endedsbx", "1".repeat(64));
    await put("killedsbx", "2".repeat(64));
    await owners.put("killedsbx", JSON.stringify({ v: OWNER_RECORD_VERSION, node: "ma", claimedAt: old, movable: "2".repeat(64), lostAt: old, killedAt: old }));
    await put("movablesbx", "3".repeat(64));
    await owners.put("movablesbx", JSON.stringify({ v: OWNER_RECORD_VERSION, node: "ma", claimedAt: old, movable: "3".repeat(64), lostAt: old }));
    await put("resumedsbx", "4".repeat(64));
    await owners.put("resumedsbx", JSON.stringify({ v: OWNER_RECORD_VERSION, node: "ma", claimedAt: old }));
    await put("freshsbx", "5".repeat(64), new Date().toISOString());
    await archives.putBlob({ name: `strayarchive.${"6".repeat(64)}` }, new Uint8Array([1]));
    const exists = async (name: string) => {
      const info = await archives.info(name);
      return !!info && !info.deleted;
    };
    const kept = async (id: string) => (await movesBucket.get(id))?.operation === "PUT";
    // A grace of a minute: the stray archive (just written) and the fresh record stay.
    await moves.sweep();
    expect(await kept("freshsbx")).toBe(true);
    expect(await exists(`strayarchive.${"6".repeat(64)}`)).toBe(true);
    expect(await kept("endedsbx")).toBe(false);
    // A grace of a second, once the objects are older: the stray archive goes too.
    const sweeper = await SandboxMoves.open({
      nc: kvA.nc,
      jsm: kvA.jsm,
      replicas: 1,
      nodeName: "ma",
      owners: ownersA,
      membership: undefined as never,
      templates,
      host: undefined as never,
      workDir: join(dirs[0]!, "archives2"),
      maxMoveBytes: 1 << 30,
      sweepGraceMs: 1_000,
      logger,
    });
    try {
      await new Promise((r) => setTimeout(r, 1_100));
      await sweeper.sweep();
    } finally {
      sweeper.close();
    }
    expect(await kept("endedsbx")).toBe(false);
    expect(await exists(`endedsbx.${"1".repeat(64)}`)).toBe(false);
    expect(await kept("killedsbx")).toBe(false);
    expect(await kept("resumedsbx")).toBe(false);
    expect(await exists(`resumedsbx.${"4".repeat(64)}`)).toBe(false);
    expect(await kept("movablesbx")).toBe(true);
    expect(await exists(`movablesbx.${"3".repeat(64)}`)).toBe(true);
    expect(await exists(`strayarchive.${"6".repeat(64)}`)).toBe(false);
  });
});
