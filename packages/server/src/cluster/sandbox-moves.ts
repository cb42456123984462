// Sandboxes that move between nodes. A node that pauses a sandbox to the filesystem publishes, after the pause
// answered, what a resume elsewhere needs: its writable layer as an archive (layer-archive.ts, the template layers'
// format) in the burrow_sandbox_layers object store, the layers it stands on (shipped, or published like a template's,
// cluster-templates.ts), and its row and boot spec in burrow_sandbox_moves (move-records.ts). Last, its owner record
// gets `movable` (the archive's digest): a record without it is never taken over, so nothing claims a half-published
// sandbox. A resume (connect) through any node of a movable sandbox whose owner is lost or down makes that node take
// it over: the template and the archive (verified) are fetched, then a revision-checked rewrite of the owner record
// names this node (one winner; the owner itself, clearing `movable` before a resume of its own, is the other
// contender), the sandbox is imported filesystem-paused under the same id and envd token, its row written, a `moved`
// event sent, and the connect resumes it as any filesystem pause. The old node, back, finds another node's record
// and removes its copy (reconcile.ts). A drain with `move` hands each sandbox of its cordoned node, paused, to the
// best other node the same way (handOver).
import { createReadStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { Objm, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Orchestrator } from "@burrow/orchestrator";
import { kvStoredKeys } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import type { Logger } from "pino";
import { apiKeyFromHeaders } from "../auth/credentials.js";
import { toE2bError } from "../errors.js";
import { sendJson } from "../gateway/responses.js";
import { DEFAULT_LIFECYCLE } from "../lifecycle/sandbox-lifecycle.js";
import type { SandboxEvents } from "../lifecycle/events.js";
import type { SandboxNetworkConfig } from "../network/network-config.js";
import type { SandboxRow } from "../store/sandboxes.js";
import { checkedDelete } from "./cluster-kv.js";
import { openClusterBucket, openClusterObjectStore } from "./cluster-stores.js";
import type { ClusterTemplates } from "./cluster-templates.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import { packLayer, unpackLayer } from "./layer-archive.js";
import type { Membership } from "./membership.js";
import { postToNode } from "./node-post.js";
import { MOVE_RECORD_VERSION, decodeMoveRecord, encodeMoveRecord, type MoveRecord } from "./move-records.js";
import { placeCreate, type PlacementNode } from "./placement.js";
import { OWNER_RECORD_VERSION, type OwnerRecord, type SandboxOwners } from "./sandbox-owners.js";
import { treeExceeds } from "./tree-size.js";

export const MOVES_BUCKET = "burrow_sandbox_moves";
export const SANDBOX_LAYERS_STORE = "burrow_sandbox_layers";
/** Move records and archives no live sandbox needs are removed once this old (a publish uploads before it writes). */
const DEFAULT_SWEEP_GRACE_MS = 10 * 60_000;
/** Connect (E2B v1, v2) and the legacy resume: the requests that take a movable sandbox over. */
const RESUME_PATH = /^\/(?:v2\/)?sandboxes\/([a-z0-9]+)\/(?:connect|resume)\/?(?:\?|$)/;

/** What this node's server gives the moves. */
export interface MoveHost {
  orchestrator: Pick<Orchestrator, "movableSandbox" | "importSandbox">;
  clientId: () => string;
  /** The sandboxes this node has (its rows). */
  ids(): string[];
  row(sandboxId: string): SandboxRow | undefined;
  network(sandboxId: string): SandboxNetworkConfig | undefined;
  /** The row's shared team (null: this node's default team) and its key's public id. */
  teamOf(row: SandboxRow): { teamId: string | null; apiKeyPublicId: string | null };
  /** This node's id of a key, by its public id. */
  keyIdOf(publicId: string): number | undefined;
  /** The team (shared id, null: default team) and local id of a key this node knows; undefined otherwise. */
  caller(apiKey: string): { teamId: string | null; keyId: number } | undefined;
  /** SandboxService.adoptMoved. */
  adopt(row: SandboxRow, move: { from: string; to: string; network?: SandboxNetworkConfig | undefined }, start: () => Promise<unknown>): Promise<unknown>;
}

export interface SandboxMovesOptions {
  nc: NatsConnection;
  /** For listing the move records' keys (kvStoredKeys). */
  jsm: JetStreamManager;
  replicas: number;
  nodeName: string;
  owners: SandboxOwners;
  membership: Membership;
  templates: ClusterTemplates;
  host: MoveHost;
  /** Where archives are written before they are sent (removed after). */
  workDir: string;
  /** A filesystem pause whose writable layer is larger than this is not published (cluster.moveMaxMB). */
  maxMoveBytes: number;
  /** How old a move record or archive no sandbox needs must be before the sweep removes it. @default 10 minutes */
  sweepGraceMs?: number;
  logger: Logger;
}

/** Who asks for a take-over: a caller's key (its team must be the sandbox's), or the operator (a drain). */
export type MoveCaller = { teamId: string | null; keyId: number } | "operator";

export class SandboxMoves {
  readonly #o: SandboxMovesOptions;
  readonly #kv: KV;
  readonly #objects: ObjectStore;
  readonly #publishing = new Map<string, Promise<boolean>>();
  readonly #taking = new Map<string, Promise<void>>();
  #stopEvents: (() => void) | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(o: SandboxMovesOptions, kv: KV, objects: ObjectStore) {
    this.#o = o;
    this.#kv = kv;
    this.#objects = objects;
  }

  static async open(o: SandboxMovesOptions): Promise<SandboxMoves> {
    const { logger } = o;
    const kvm = new Kvm(o.nc);
    const kv = await whenClusterAnswers(`open bucket ${MOVES_BUCKET}`, () => openClusterBucket(kvm, MOVES_BUCKET, o.replicas), { logger });
    const objm = new Objm(o.nc);
    const objects = await whenClusterAnswers(`open object store ${SANDBOX_LAYERS_STORE}`, () => openClusterObjectStore(objm, SANDBOX_LAYERS_STORE, o.replicas), { logger });
    await rm(o.workDir, { recursive: true, force: true });
    await mkdir(o.workDir, { recursive: true });
    const moves = new SandboxMoves(o, kv, objects);
    o.templates.holdLayers(() => moves.heldLayerDigests());
    return moves;
  }

  /**
   * Publish each filesystem pause once it answered; withdraw what a resume or an end made stale. The filesystem pauses
   * this node has now (made before it started, or by an older version) are published in the background.
   */
  follow(events: SandboxEvents): void {
    this.#stopEvents = events.subscribe((event) => {
      const { sandboxId } = event;
      if ((event.type === "paused" && event.pauseKind === "filesystem") || event.type === "pause_converted") {
        void this.publish(sandboxId).catch((err: unknown) => this.#o.logger.warn({ err, sandboxId }, "could not publish a paused sandbox for moves"));
      } else if (event.type === "resumed" || event.type === "killed" || event.type === "timed_out") {
        void this.#discard(sandboxId).catch((err: unknown) => this.#o.logger.warn({ err, sandboxId }, "could not remove a sandbox's move record"));
      }
    });
    const grace = this.#o.sweepGraceMs ?? DEFAULT_SWEEP_GRACE_MS;
    this.#sweepTimer = setInterval(() => void this.sweep().catch((err: unknown) => this.#o.logger.warn({ err }, "could not sweep stale sandbox moves")), Math.max(1_000, grace / 2));
    this.#sweepTimer.unref();
    void (async () => {
      for (const sandboxId of this.#o.host.ids()) {
        if (this.#closed) return;
        if (this.#o.host.row(sandboxId)?.pauseKind !== "filesystem") continue;
        await this.publish(sandboxId).catch((err: unknown) => this.#o.logger.warn({ err, sandboxId }, "could not publish a paused sandbox for moves"));
      }
    })();
  }

  /**
   * Publish a filesystem-paused sandbox of this node (idempotent; concurrent calls share one). False when it is not
   * movable (running, memory-paused, with volumes, not this node's).
   */
  publish(sandboxId: string): Promise<boolean> {
    let pending = this.#publishing.get(sandboxId);
    if (!pending) {
      pending = this.#publish(sandboxId).finally(() => this.#publishing.delete(sandboxId));
      this.#publishing.set(sandboxId, pending);
    }
    return pending;
  }

  async #publish(sandboxId: string): Promise<boolean> {
    const { host, owners, nodeName, templates, logger } = this.#o;
    const movable = host.orchestrator.movableSandbox?.(sandboxId);
    const row = host.row(sandboxId);
    if (!movable || !row || row.state !== "paused") return false;
    const owner = await owners.read(sandboxId);
    if (!owner || owner.record.node !== nodeName || owner.record.lostAt !== undefined) return false;
    const previous = await this.#record(sandboxId);
    if (previous && previous.bootId === movable.bootId && owner.record.movable === previous.writable.digest) return true;
    const { maxMoveBytes } = this.#o;
    if (await treeExceeds(movable.upperDir, maxMoveBytes)) {
      // Uploading it on every pause would cost the cluster more than a move is worth: it stays on this node.
      const why = `its writable layer exceeds the cluster's move limit of ${Math.floor(maxMoveBytes / 1048576)} MiB`;
      logger.warn({ sandboxId, maxMoveBytes }, "a filesystem-paused sandbox is not published for moves: its writable layer is too large");
      await this.#refuse(sandboxId, why);
      return false;
    }
    const started = Date.now();
    const sources = await templates.layerSources(movable.boot.layers);
    const file = join(this.#o.workDir, `${sandboxId}-${process.pid}.tar`);
    let writable;
    try {
      writable = await packLayer(movable.upperDir, file);
      const name = objectName(sandboxId, writable.digest);
      const info = await this.#objects.info(name);
      if (!info || info.deleted) {
        const stream = Readable.toWeb(createReadStream(file)) as unknown as ReadableStream<Uint8Array>;
        await this.#objects.put({ name, description: `writable layer of sandbox ${sandboxId}` }, stream);
      }
    } finally {
      await rm(file, { force: true });
    }
    // Booted meanwhile (a resume here): what was read is stale, and the resume withdrew it.
    if (host.orchestrator.movableSandbox?.(sandboxId)?.bootId !== movable.bootId) return false;
    const { teamId, apiKeyPublicId } = host.teamOf(row);
    const record: MoveRecord = {
      v: MOVE_RECORD_VERSION,
      sandboxId,
      node: nodeName,
      publishedAt: new Date().toISOString(),
      bootId: movable.bootId,
      row: {
        templateId: row.templateId,
        alias: row.alias,
        metadata: row.metadata,
        cpuCount: row.cpuCount,
        memoryMB: row.memoryMB,
        diskSizeMB: row.diskSizeMB,
        startedAt: row.startedAt.toISOString(),
        envdVersion: row.envdVersion,
        envdAccessToken: row.envdAccessToken,
        allowInternetAccess: row.allowInternetAccess,
        teamId,
        apiKeyPublicId,
        mcpServers: row.mcpServers ?? null,
        lifecycle: row.lifecycle ?? DEFAULT_LIFECYCLE,
        timeoutSec: row.timeoutSec ?? null,
        network: host.network(sandboxId),
      },
      boot: {
        layers: movable.boot.layers.map((layerId, i) => ({ layerId, source: sources[i]! })),
        ...(movable.boot.runtime ? { runtime: movable.boot.runtime } : {}),
        envVars: movable.boot.envVars,
        accessToken: movable.boot.accessToken,
      },
      limits: movable.limits,
      allowInternetAccess: movable.allowInternetAccess,
      ...(movable.egress ? { egress: movable.egress } : {}),
      writable,
    };
    await this.#kv.put(sandboxId, encodeMoveRecord(record));
    // A newer publication replaces the older one: its archive is nobody's now.
    if (previous && previous.writable.digest !== writable.digest) {
      await this.#objects.delete(objectName(sandboxId, previous.writable.digest)).catch((err: unknown) => logger.warn({ err, sandboxId }, "could not delete a replaced sandbox archive"));
    }
    // The owner record says movable last, and only while the sandbox is still this node's and still paused.
    for (let attempt = 0; attempt < 3; attempt++) {
      const stored = await owners.read(sandboxId);
      if (!stored || stored.record.node !== nodeName || stored.record.lostAt !== undefined || host.row(sandboxId)?.state !== "paused") return false;
      const { moveRefused: _refused, ...rest } = stored.record;
      if (await owners.replace(sandboxId, { ...rest, v: Math.max(stored.record.v, OWNER_RECORD_VERSION), movable: writable.digest }, stored.revision)) {
        logger.info({ sandboxId, bytes: writable.size, ms: Date.now() - started }, "published a paused sandbox: it can be resumed on another node");
        return true;
      }
    }
    throw new BurrowError(Code.Aborted, `the owner record of sandbox ${sandboxId} kept changing while it was published`, { reason: "revision_conflict" });
  }

  /**
   * Before this node resumes its own sandbox: `movable` is cleared (revision-checked), so that no node takes over a
   * copy that is about to be stale. A sandbox another node has taken over meanwhile is not resumed here.
   */
  async beforeResume(sandboxId: string): Promise<void> {
    const { owners, nodeName } = this.#o;
    // Most resumes (memory pauses, unpublished ones) need no round trip: only a node that is down or lost has its
    // sandboxes taken over, and its own mirror then shows the other node's record.
    const cached = owners.cachedRecord(sandboxId);
    if (cached && cached.node === nodeName && cached.movable === undefined && cached.moveRefused === undefined) return;
    for (let attempt = 0; attempt < 3; attempt++) {
      const stored = await owners.read(sandboxId);
      if (!stored) return;
      if (stored.record.node !== nodeName) {
        throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" was moved to node ${stored.record.node}`, { reason: "sandbox_moved" });
      }
      if (stored.record.movable === undefined && stored.record.moveRefused === undefined) return;
      const { movable: _movable, moveRefused: _refused, ...rest } = stored.record;
      if (await owners.replace(sandboxId, rest, stored.revision)) return;
    }
    throw new BurrowError(Code.Aborted, `the owner record of sandbox ${sandboxId} kept changing before its resume`, { reason: "revision_conflict" });
  }

  /**
   * Whether a node may take the sandbox over now: published, and its owner lost, down or this node (a take-over that
   * failed half-way); with `cordonedOwner` (a drain's hand-over) also an owner that is up and cordoned. A connect of a
   * sandbox on an up node is that node's to resume, drained with `pause` or not, as before.
   */
  takeable(record: OwnerRecord | undefined, cordonedOwner = false): boolean {
    // Killed by its user while it was lost (lost-kill.ts): ended, not moved.
    if (!record?.movable || record.killedAt !== undefined) return false;
    if (record.node === this.#o.nodeName || record.lostAt !== undefined) return true;
    const view = this.#o.membership.node(record.node);
    return !view || view.status !== "up" || (cordonedOwner && view.cordoned);
  }

  /**
   * The connect/resume hook, in front of the forwarder: a resume of a movable sandbox this node does not have, asked
   * by a caller whose key this node knows, takes it over here first; `next` then answers it as a local sandbox. False
   * leaves the request to the forwarder.
   */
  handleRequest(req: IncomingMessage, res: ServerResponse, next: () => void): boolean {
    if (req.method !== "POST") return false;
    const sandboxId = RESUME_PATH.exec(req.url ?? "")?.[1];
    if (!sandboxId || this.#o.host.row(sandboxId) || !this.takeable(this.#o.owners.cachedRecord(sandboxId))) return false;
    const key = apiKeyFromHeaders(req.headers);
    const caller = key ? this.#o.host.caller(key) : undefined;
    // Unauthenticated: the forwarder and the API answer it as they would.
    if (!caller) return false;
    void this.take(sandboxId, caller).then(next, (err: unknown) => {
      req.resume();
      const { status, body } = toE2bError(err);
      sendJson(res, status, JSON.stringify(body));
    });
    return true;
  }

  /** Take the sandbox over and make it this node's, filesystem-paused (concurrent calls share one). */
  take(sandboxId: string, caller: MoveCaller, signal?: AbortSignal): Promise<void> {
    let pending = this.#taking.get(sandboxId);
    if (!pending) {
      pending = this.#take(sandboxId, caller, signal).finally(() => this.#taking.delete(sandboxId));
      this.#taking.set(sandboxId, pending);
    }
    return pending;
  }

  async #take(sandboxId: string, caller: MoveCaller, signal?: AbortSignal): Promise<void> {
    const { host, owners, nodeName, templates, logger } = this.#o;
    if (host.row(sandboxId)) return;
    const notFound = () => new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    const stored = await owners.read(sandboxId);
    if (!stored || !this.takeable(stored.record, caller === "operator")) throw notFound();
    const record = await this.#record(sandboxId);
    if (!record || record.writable.digest !== stored.record.movable) {
      throw new BurrowError(Code.Unavailable, `sandbox ${sandboxId} is not completely published yet; retry`, { reason: "move_unpublished" });
    }
    if (caller !== "operator" && caller.teamId !== record.row.teamId) throw notFound();
    const started = Date.now();
    const from = stored.record.node === nodeName ? (stored.record.movedFrom ?? record.node) : stored.record.node;
    // The owner record is rewritten once the archive is here and verified, before the sandbox exists here: a corrupt
    // or missing archive leaves the sandbox where it was, and a node that loses the race has made nothing.
    const claim = async () => {
      if (stored.record.node === nodeName) return;
      const { lostAt: _lostAt, killedAt: _killedAt, ...rest } = stored.record;
      const mine: OwnerRecord = {
        ...rest,
        v: Math.max(stored.record.v, OWNER_RECORD_VERSION),
        node: nodeName,
        claimedAt: new Date().toISOString(),
        templateId: record.row.templateId,
        teamId: record.row.teamId,
        vcpu: record.row.cpuCount,
        memoryMB: record.row.memoryMB,
        paused: true,
        movedFrom: from,
      };
      // One winner: another node (or the owner's own resume) that wrote first makes this fail.
      if (!(await owners.replace(sandboxId, mine, stored.revision))) {
        throw new BurrowError(Code.Aborted, `sandbox ${sandboxId} was taken over or resumed by another node meanwhile; retry`, { reason: "revision_conflict" });
      }
      logger.info({ sandboxId, from }, "took over a sandbox of another node");
    };
    const keyId = record.row.apiKeyPublicId !== null ? host.keyIdOf(record.row.apiKeyPublicId) : undefined;
    const apiKeyId = keyId ?? (record.row.teamId === null || caller === "operator" ? null : caller.keyId);
    await templates.ensureLocal(record.row.templateId, apiKeyId, signal);
    const layers = await templates.localLayers(record.boot.layers, signal);
    const timeoutSec = record.row.timeoutSec ?? 300;
    const row: SandboxRow = {
      sandboxId,
      templateId: record.row.templateId,
      alias: record.row.alias,
      clientId: host.clientId(),
      metadata: record.row.metadata,
      cpuCount: record.row.cpuCount,
      memoryMB: record.row.memoryMB,
      diskSizeMB: record.row.diskSizeMB,
      startedAt: new Date(record.row.startedAt),
      endAt: new Date(Date.now() + timeoutSec * 1000),
      state: "paused",
      envdVersion: record.row.envdVersion,
      envdAccessToken: record.row.envdAccessToken,
      allowInternetAccess: record.row.allowInternetAccess,
      apiKeyId,
      mcpServers: record.row.mcpServers,
      lifecycle: record.row.lifecycle,
      timeoutSec: record.row.timeoutSec,
      pauseKind: "filesystem",
    };
    const importSandbox = host.orchestrator.importSandbox;
    if (!importSandbox) throw new BurrowError(Code.Unimplemented, "this node's orchestrator cannot take sandboxes over");
    const digest = record.writable.digest;
    await host.adopt(row, { from, to: nodeName, network: record.row.network }, () =>
      importSandbox.call(host.orchestrator, {
        sandboxId,
        templateId: record.row.templateId,
        boot: { layers, ...(record.boot.runtime ? { runtime: record.boot.runtime } : {}), envVars: record.boot.envVars, accessToken: record.boot.accessToken },
        limits: record.limits,
        allowInternetAccess: record.allowInternetAccess,
        egress: record.egress,
        startedAt: record.row.startedAt,
        fillUpper: async (dir, fillSignal) => {
          const object = await this.#objects.get(objectName(sandboxId, digest));
          if (!object) throw new BurrowError(Code.NotFound, `the writable layer of sandbox ${sandboxId} is not in the cluster's object store`, { reason: "layer_missing" });
          await unpackLayer(object.data as unknown as AsyncIterable<Uint8Array>, digest, dir, fillSignal);
          await claim();
        },
        ...(signal ? { signal } : {}),
      }),
    );
    logger.info({ sandboxId, from, bytes: record.writable.size, ms: Date.now() - started }, "sandbox moved to this node (filesystem-paused)");
  }

  /**
   * Give a filesystem-paused sandbox of this node to the best other node (placement over the nodes' records), which
   * takes it over and resumes it. `headers`: the operator's credentials, passed on. Resolves the node's name.
   */
  async handOver(sandboxId: string, headers: Record<string, string>, signal?: AbortSignal): Promise<string> {
    const { membership, nodeName, host } = this.#o;
    if (!(await this.publish(sandboxId))) throw new BurrowError(Code.FailedPrecondition, `sandbox ${sandboxId} cannot move (not filesystem-paused, or it has volumes)`, { reason: "not_movable" });
    const row = host.row(sandboxId);
    const names = [...new Set([row?.templateId, row?.alias].filter((n): n is string => !!n))];
    const nodes = membership.list().filter((v) => v.name !== nodeName).map((view): PlacementNode => ({
      name: view.name,
      up: view.status === "up",
      cordoned: view.cordoned,
      templates: view.load.templates ? new Set(view.load.templates) : undefined,
      sandboxes: view.load.runningSandboxes,
      capacity: view.load.capacity ?? 100,
      freeMemoryBytes: view.load.freeMemoryBytes,
      warm: 0,
      cpu: view.load.cpu,
    }));
    const plan = placeCreate(nodes, { template: names, self: nodeName, fetchable: true });
    const refused: string[] = [];
    for (const node of plan.order) {
      const view = membership.node(node);
      if (!view) continue;
      const answer = await postToNode(`${view.apiUrl}/burrow/v1/nodes/${encodeURIComponent(node)}/sandboxes/${sandboxId}/take`, headers, "{}", signal).catch((err: unknown) => ({
        status: 0,
        body: err instanceof Error ? err.message : String(err),
      }));
      if (answer.status === 200) return node;
      refused.push(`${node} (${answer.status || "unreachable"}: ${answer.body.slice(0, 200)})`);
      // Taken by that node even though it failed later: it is that node's now, not another's to take.
      if ((await this.#o.owners.read(sandboxId))?.record.node === node) break;
    }
    const skipped = plan.skipped.map((s) => `${s.node} ${s.why}`);
    throw new BurrowError(Code.Unavailable, `no node took sandbox ${sandboxId}: ${[...refused, ...skipped].join(", ") || "no other node"}`, { reason: "no_node_available" });
  }

  async #record(sandboxId: string): Promise<MoveRecord | undefined> {
    const entry = await this.#kv.get(sandboxId);
    return entry?.operation === "PUT" ? decodeMoveRecord(entry.value) : undefined;
  }

  /** Say in the owner record why this pause is not published (revision-checked, while it is this node's and paused). */
  async #refuse(sandboxId: string, why: string): Promise<void> {
    const { owners, nodeName, host } = this.#o;
    for (let attempt = 0; attempt < 3; attempt++) {
      const stored = await owners.read(sandboxId);
      if (!stored || stored.record.node !== nodeName || stored.record.lostAt !== undefined || host.row(sandboxId)?.state !== "paused") return;
      if (stored.record.moveRefused === why && stored.record.movable === undefined) return;
      const { movable: _movable, ...rest } = stored.record;
      if (await owners.replace(sandboxId, { ...rest, v: Math.max(stored.record.v, OWNER_RECORD_VERSION), moveRefused: why }, stored.revision)) return;
    }
  }

  /**
   * Every move record, by sandbox id (one read per key). Records this node cannot read (a newer node's) are in
   * `unreadable` with their JSON, so that no sweep here removes what they need.
   */
  async #records(): Promise<{ found: Map<string, { record: MoveRecord; revision: number }>; unreadable: Map<string, unknown> }> {
    const found = new Map<string, { record: MoveRecord; revision: number }>();
    const unreadable = new Map<string, unknown>();
    for (const key of await kvStoredKeys(this.#o.jsm, MOVES_BUCKET)) {
      const entry = await this.#kv.get(key);
      if (entry?.operation !== "PUT") continue;
      try {
        found.set(key, { record: decodeMoveRecord(entry.value), revision: entry.revision });
      } catch {
        unreadable.set(key, JSON.parse(new TextDecoder().decode(entry.value)) as unknown);
      }
    }
    return { found, unreadable };
  }

  /** Template layer objects that published sandboxes stand on (held from the template sweep, cluster-templates.ts). */
  async heldLayerDigests(): Promise<Set<string>> {
    const held = new Set<string>();
    const { found, unreadable } = await this.#records();
    for (const { record } of found.values()) {
      for (const { source } of record.boot.layers) if ("digest" in source) held.add(source.digest);
    }
    // A newer node's record: every digest it names where a layer's would be, read leniently.
    for (const value of unreadable.values()) {
      const layers = (value as { boot?: { layers?: unknown } } | null)?.boot?.layers;
      if (!Array.isArray(layers)) throw new BurrowError(Code.FailedPrecondition, "a sandbox move record names layers this node cannot read", { reason: "move_record_too_new" });
      for (const layer of layers as Array<{ source?: { digest?: unknown } }>) if (typeof layer?.source?.digest === "string") held.add(layer.source.digest);
    }
    return held;
  }

  /**
   * Remove what no sandbox needs any more, older than the grace: move records whose sandbox ended (no owner record,
   * or killed while its node was lost) or whose archive the owner record no longer names (resumed, republished),
   * and archives no move record names (a publish cut short, a record removed before its object). Any node may run
   * it; deletes are revision-checked or idempotent.
   */
  async sweep(): Promise<{ records: number; objects: number }> {
    const grace = this.#o.sweepGraceMs ?? DEFAULT_SWEEP_GRACE_MS;
    const now = Date.now();
    const named = new Set<string>();
    let records = 0;
    const { found, unreadable } = await this.#records();
    for (const [sandboxId, { record, revision }] of found) {
      const name = objectName(sandboxId, record.writable.digest);
      const owner = (await this.#o.owners.read(sandboxId))?.record;
      const stale = !owner || owner.killedAt !== undefined || owner.movable !== record.writable.digest;
      if (!stale || now - Date.parse(record.publishedAt) < grace) {
        named.add(name);
        continue;
      }
      try {
        await checkedDelete(this.#kv, sandboxId, revision);
      } catch {
        // Republished meanwhile: the newer record is not stale.
        named.add(name);
        continue;
      }
      await this.#objects.delete(name).catch(() => undefined);
      records++;
    }
    let objects = 0;
    for (const info of await this.#objects.list()) {
      // A newer node's record: its sandbox's archives are left to a node that can read it.
      if (info.deleted || named.has(info.name) || unreadable.has(info.name.split(".", 1)[0]!) || now - Date.parse(info.mtime) < grace) continue;
      await this.#objects.delete(info.name).catch((err: unknown) => this.#o.logger.warn({ err, object: info.name }, "could not delete a sandbox archive"));
      objects++;
    }
    if (records || objects) this.#o.logger.info({ records, objects }, "removed stale sandbox move records and archives");
    return { records, objects };
  }

  /** Remove the move record and archive of a sandbox resumed or ended on its owner (not of one another node took over). */
  async #discard(sandboxId: string): Promise<void> {
    const owner = await this.#o.owners.read(sandboxId);
    if (owner && owner.record.node !== this.#o.nodeName) return;
    const entry = await this.#kv.get(sandboxId);
    if (entry?.operation !== "PUT") return;
    const record = decodeMoveRecord(entry.value);
    await checkedDelete(this.#kv, sandboxId, entry.revision).catch(() => undefined);
    await this.#objects.delete(objectName(sandboxId, record.writable.digest)).catch(() => undefined);
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#sweepTimer);
    this.#stopEvents?.();
  }
}

/** Objects are per sandbox: two sandboxes with the same files must not share one that either may delete. */
function objectName(sandboxId: string, digest: string): string {
  return `${sandboxId}.${digest}`;
}



