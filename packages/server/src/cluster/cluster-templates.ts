// Templates and snapshots on every node of a cluster. A node publishes each template or snapshot it makes (every
// build, every snapshot; shipped templates excepted, each node makes its own): the layers it names go to the
// burrow_layers object store as deterministic archives named by their sha256 (layer-archive.ts; an object already
// there is not sent again), then its manifest to the burrow_templates bucket (template-records.ts), revision-checked.
// Publishing runs in the background after the build or snapshot answered, again at every heartbeat until it
// succeeds. A create for a template this node lacks but the bucket has (placed here or forwarded here) first fetches
// each missing layer by digest — verified while it streams, unpacked beside the layers directory, renamed into place,
// one fetch per digest however many creates wait for it —, records the template's team here, then saves the manifest:
// from then on it is this node's template. Deleting a template anywhere deletes its record; a node that fetched it
// deletes its copy at the next heartbeat, and objects no record names are swept.
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, realpath, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";
import { Objm, type ObjectStore } from "@nats-io/obj";
import type { TemplateManifest } from "@burrow/orchestrator";
import { BurrowError, Code, type TemplateSummary } from "@burrow/protocol";
import type { Logger } from "pino";
import { ABSENT, checkedDelete, checkedPut } from "./cluster-kv.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import { openClusterBucket, openClusterObjectStore } from "./cluster-stores.js";
import { packLayer, unpackLayer, type PackedLayer } from "./layer-archive.js";
import {
  TEMPLATE_RECORD_VERSION,
  decodeTemplateRecord,
  encodeTemplateRecord,
  manifestLayerIds,
  recordMatches,
  renameLayers,
  type LayerSource,
  type TemplateRecord,
} from "./template-records.js";
import { WatchedBucket } from "./watched-bucket.js";

export const TEMPLATES_BUCKET = "burrow_templates";
export const LAYERS_STORE = "burrow_layers";
/** An object no record names is kept this long: its record may be on its way (objects go up first). */
const SWEEP_GRACE_MS = 10 * 60_000;

/** The node's template store as this module uses it (the orchestrator's TemplateStore). */
export interface LocalTemplates {
  readonly layersRoot: string;
  list(): TemplateManifest[];
  get(templateId: string): TemplateManifest | undefined;
  resolve(ref: string): TemplateManifest | undefined;
  layerPath(layerId: string): string;
  save(manifest: TemplateManifest): Promise<void>;
  onChange(listener: (templateId: string) => void): () => void;
}

/** Who owns templates here (teams/ownership.ts), in the cluster's terms: null is the default team. */
export interface TemplateTeams {
  ownerOf(templateId: string): { kind: "template" | "snapshot"; team: string | null };
  adopt(kind: "template" | "snapshot", templateId: string, team: string | null): void;
  /** Whether the caller's key may start sandboxes of a template of `team`. */
  mayUse(apiKeyId: number | null | undefined, team: string | null): boolean;
}

export interface ClusterTemplatesOptions {
  nc: NatsConnection;
  replicas: number;
  nodeName: string;
  local: LocalTemplates;
  teams: TemplateTeams;
  /** Delete a template here as the template API does (its layers go when no sandbox needs them). */
  deleteLocal: (templateId: string) => Promise<boolean>;
  /** Names of shipped templates, which every node makes itself and never publishes. */
  shipped: ReadonlySet<string>;
  intervalMs: number;
  /** How old an object no record names must be before the sweep deletes it. @default 10 minutes */
  sweepGraceMs?: number;
  logger: Logger;
}

export class ClusterTemplates {
  readonly #o: ClusterTemplatesOptions;
  readonly #kv: KV;
  readonly #objects: ObjectStore;
  readonly #mirror: WatchedBucket<TemplateRecord>;
  readonly #transfers: string;
  /** Templates whose current manifest is in the bucket (published or fetched here), by id → fingerprint. */
  readonly #published = new Map<string, string>();
  /** Layer id → its archive's object, for layers packed or fetched here. */
  readonly #digests = new Map<string, PackedLayer>();
  readonly #layerFetches = new Map<string, Promise<void>>();
  readonly #imports = new Map<string, Promise<void>>();
  /** Templates of other nodes whose team is recorded here (so that lists and checks scope them as local ones). */
  readonly #adopted = new Set<string>();
  /** Digests something else still needs (published sandboxes' layers, sandbox-moves.ts): never swept. */
  #held: (() => Promise<Iterable<string>>) | undefined;
  #syncing: Promise<void> | undefined;
  #again = false;
  #closed = false;
  readonly #timer: NodeJS.Timeout;
  readonly #stopListening: () => void;
  /** Layers fetched from the object store since start (for tests and benchmarks: a second create fetches none). */
  fetchedLayers = 0;

  private constructor(o: ClusterTemplatesOptions, kv: KV, objects: ObjectStore, mirror: WatchedBucket<TemplateRecord>, transfers: string) {
    this.#o = o;
    this.#kv = kv;
    this.#objects = objects;
    this.#mirror = mirror;
    this.#transfers = transfers;
    this.#stopListening = o.local.onChange(() => this.sync());
    this.#timer = setInterval(() => this.sync(), o.intervalMs);
    this.#timer.unref();
  }

  static async open(o: ClusterTemplatesOptions): Promise<ClusterTemplates> {
    const logger = o.logger;
    const kvm = new Kvm(o.nc);
    const kv = await whenClusterAnswers(`open bucket ${TEMPLATES_BUCKET}`, () => openClusterBucket(kvm, TEMPLATES_BUCKET, o.replicas), { logger });
    const objm = new Objm(o.nc);
    const objects = await whenClusterAnswers(`open object store ${LAYERS_STORE}`, () => openClusterObjectStore(objm, LAYERS_STORE, o.replicas), { logger });
    const mirror = await WatchedBucket.open(kv, decodeTemplateRecord, logger, TEMPLATES_BUCKET);
    // Beside the layers, on the same filesystem (the data image), so that a fetched layer is renamed into place.
    const transfers = join(dirname(await realpath(o.local.layersRoot)), "layer-transfers");
    await rm(transfers, { recursive: true, force: true });
    await mkdir(transfers, { recursive: true });
    const templates = new ClusterTemplates(o, kv, objects, mirror, transfers);
    templates.sync();
    return templates;
  }

  /** The cluster's record of a template this node does not have (by id, alias or `name:tag`). */
  find(ref: string): TemplateRecord | undefined {
    if (this.#o.local.resolve(ref)) return undefined;
    for (const [, entry] of this.#mirror.entries()) if (recordMatches(entry.value, ref)) return entry.value;
    return undefined;
  }

  /** Every template the cluster has. */
  records(): TemplateRecord[] {
    return [...this.#mirror.entries()].map(([, e]) => e.value);
  }

  /** GET /templates' entries for the cluster's templates this node does not have (yet): ready, like local ones. */
  summaries(): TemplateSummary[] {
    return this.records()
      .filter((r) => !this.#o.local.get(r.templateId))
      .map(({ manifest: m }) => ({
        templateId: m.templateId,
        aliases: [...m.aliases],
        buildId: m.buildId?.toLowerCase(),
        tags: Object.keys(m.tags ?? {}),
        createdAt: m.createdAt,
        cpuCount: m.defaults.cpuCount,
        memoryMB: m.defaults.memoryMB,
        buildStatus: "ready" as const,
      }));
  }

  /**
   * Make the template local when this node lacks it and the cluster has it (a template of the caller's team or of
   * the default team). Nothing happens for a template this node has or no node published: the create answers as
   * on one machine.
   */
  async ensureLocal(ref: string, apiKeyId: number | null | undefined, signal?: AbortSignal): Promise<void> {
    if (this.#o.local.resolve(ref)) return;
    const record = this.find(ref) ?? (await this.#read(ref.split(":", 1)[0]!));
    if (!record || !this.#o.teams.mayUse(apiKeyId, record.team)) return;
    let pending = this.#imports.get(record.templateId);
    if (!pending) {
      pending = this.#import(record, signal).finally(() => this.#imports.delete(record.templateId));
      this.#imports.set(record.templateId, pending);
    }
    await pending;
  }

  async #read(templateId: string): Promise<TemplateRecord | undefined> {
    const entry = await this.#kv.get(templateId).catch(() => null);
    return entry?.operation === "PUT" ? this.#mirror.apply(entry)?.value : undefined;
  }

  async #import(record: TemplateRecord, signal?: AbortSignal): Promise<void> {
    const { local, teams, logger } = this.#o;
    const renamed = new Map<string, string>();
    const started = Date.now();
    let fetched = 0;
    for (const layerId of manifestLayerIds(record.manifest)) {
      const source = record.layers[layerId];
      if (!source) throw new BurrowError(Code.DataLoss, `template ${record.templateId}'s record names no source for layer ${layerId}`, { reason: "bad_template_record" });
      if ("shipped" in source) {
        const here = local.resolve(source.shipped)?.layers[source.index];
        if (!here) {
          throw new BurrowError(Code.FailedPrecondition, `template ${record.templateId} is built on '${source.shipped}', which node ${this.#o.nodeName} does not have`, {
            reason: "base_template_missing",
          });
        }
        renamed.set(layerId, here);
        continue;
      }
      if (await isDirectory(local.layerPath(layerId))) continue;
      await this.#fetchLayer(layerId, source.digest, signal);
      this.#digests.set(layerId, { digest: source.digest, size: source.size });
      fetched++;
    }
    const manifest = renameLayers(record.manifest, renamed);
    // The team first: the create that waits for this checks it as soon as the manifest is there.
    teams.adopt(record.kind, record.templateId, record.team);
    await local.save(manifest);
    // A garbage collection here between a layer's rename and the save removed it as unreferenced: the saved manifest
    // protects it now, so it is fetched again.
    for (const [layerId, source] of Object.entries(record.layers)) {
      if ("digest" in source && !renamed.has(layerId) && !(await isDirectory(local.layerPath(layerId)))) await this.#fetchLayer(layerId, source.digest, signal);
    }
    this.#published.set(manifest.templateId, fingerprint(manifest));
    logger.info({ templateId: record.templateId, from: record.node, layersFetched: fetched, ms: Date.now() - started }, "fetched a template from the cluster");
  }

  /** One fetch per digest: concurrent creates of one template (or of two sharing a layer) wait for the same one. */
  #fetchLayer(layerId: string, digest: string, signal?: AbortSignal): Promise<void> {
    let pending = this.#layerFetches.get(digest);
    if (!pending) {
      pending = this.#download(layerId, digest, signal).finally(() => this.#layerFetches.delete(digest));
      this.#layerFetches.set(digest, pending);
    }
    return pending;
  }

  async #download(layerId: string, digest: string, signal?: AbortSignal): Promise<void> {
    const dir = await mkdtemp(join(this.#transfers, "fetch-"));
    try {
      const object = await this.#objects.get(digest);
      if (!object) throw new BurrowError(Code.NotFound, `layer object ${digest} (layer ${layerId}) is not in the cluster's object store`, { reason: "layer_missing" });
      await unpackLayer(object.data as unknown as AsyncIterable<Uint8Array>, digest, dir, signal);
      try {
        await rename(dir, this.#o.local.layerPath(layerId));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // Made meanwhile (the same content: the ids name it): ours goes.
        if ((code !== "ENOTEMPTY" && code !== "EEXIST") || !(await isDirectory(this.#o.local.layerPath(layerId)))) throw err;
      }
      this.fetchedLayers++;
    } catch (err) {
      this.#o.logger.error({ err, layerId, digest }, "could not fetch a template layer");
      throw err;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Where each of these layers (a sandbox's, sandbox-moves.ts) comes from for another node: "layer i of shipped
   * template T", or an object of the layers store, archived and sent now unless one has its digest already.
   */
  async layerSources(layerIds: readonly string[]): Promise<LayerSource[]> {
    const shipped = this.#shippedLayers();
    const sources: LayerSource[] = [];
    for (const layerId of layerIds) sources.push(shipped.get(layerId) ?? (await this.#upload(layerId)).object);
    return sources;
  }

  /**
   * This node's layer ids for layers another node named by `layerSources`: a shipped one is this node's own layer of
   * the template, an object keeps its layer id and is fetched (verified) when missing here.
   */
  async localLayers(layers: ReadonlyArray<{ layerId: string; source: LayerSource }>, signal?: AbortSignal): Promise<string[]> {
    const ids: string[] = [];
    for (const { layerId, source } of layers) {
      if ("shipped" in source) {
        const here = this.#o.local.resolve(source.shipped)?.layers[source.index];
        if (!here) throw new BurrowError(Code.FailedPrecondition, `node ${this.#o.nodeName} does not have the shipped template '${source.shipped}'`, { reason: "base_template_missing" });
        ids.push(here);
        continue;
      }
      if (!(await isDirectory(this.#o.local.layerPath(layerId)))) await this.#fetchLayer(layerId, source.digest, signal);
      ids.push(layerId);
    }
    return ids;
  }

  /** Publish what changed, delete what was deleted: now, or after the run under way. Never throws. */
  sync(): void {
    if (this.#closed) return;
    if (this.#syncing) {
      this.#again = true;
      return;
    }
    this.#syncing = this.#syncOnce()
      .catch((err: unknown) => this.#o.logger.warn({ err }, "template publishing failed; retried at the next heartbeat"))
      .finally(() => {
        this.#syncing = undefined;
        if (this.#again) {
          this.#again = false;
          this.sync();
        }
      });
  }

  /** Resolves when the publishing under way (if any) is done: for tests, close and benchmarks. */
  async settled(): Promise<void> {
    while (this.#syncing) await this.#syncing;
  }

  async #syncOnce(): Promise<void> {
    const { local, shipped, teams } = this.#o;
    for (const record of this.records()) {
      if (this.#adopted.has(record.templateId) || local.get(record.templateId)) continue;
      teams.adopt(record.kind, record.templateId, record.team);
      this.#adopted.add(record.templateId);
    }
    const here = new Set<string>();
    let failed: unknown;
    for (const manifest of local.list()) {
      here.add(manifest.templateId);
      if (isShipped(manifest, shipped)) continue;
      const fp = fingerprint(manifest);
      if (this.#published.get(manifest.templateId) === fp) {
        // Deleted on another node (its record gone from the watched bucket): deleted here too.
        if (!this.#mirror.get(manifest.templateId)) await this.#deletedElsewhere(manifest.templateId);
        continue;
      }
      try {
        await this.#publish(manifest, fp);
      } catch (err) {
        failed ??= err;
      }
    }
    let removed = false;
    for (const templateId of [...this.#published.keys()]) {
      if (here.has(templateId)) continue;
      this.#published.delete(templateId);
      await this.#unpublish(templateId);
      removed = true;
    }
    if (removed) await this.#sweep();
    if (failed) throw failed;
  }

  async #deletedElsewhere(templateId: string): Promise<void> {
    const entry = await this.#kv.get(templateId);
    if (entry?.operation === "PUT") return void this.#mirror.apply(entry);
    this.#published.delete(templateId);
    this.#o.logger.info({ templateId }, "a template deleted on another node is deleted here");
    await this.#o.deleteLocal(templateId);
  }

  async #publish(manifest: TemplateManifest, fp: string): Promise<void> {
    const { templateId } = manifest;
    const existing = await this.#kv.get(templateId);
    const previous = existing?.operation === "PUT" ? decodeTemplateRecord(existing.value) : undefined;
    if (previous && fingerprint(previous.manifest) === fp) {
      this.#published.set(templateId, fp);
      this.#mirror.apply(existing!);
      return;
    }
    // Layers are immutable: one the previous record named (a node restarted since) need not be archived again.
    for (const [layerId, source] of Object.entries(previous?.layers ?? {})) if ("digest" in source && !this.#digests.has(layerId)) this.#digests.set(layerId, source);
    const started = Date.now();
    const shippedLayers = this.#shippedLayers();
    const layers: Record<string, LayerSource> = {};
    let uploaded = 0;
    for (const layerId of manifestLayerIds(manifest)) {
      const shipped = shippedLayers.get(layerId);
      if (shipped) {
        layers[layerId] = shipped;
        continue;
      }
      const packed = await this.#upload(layerId);
      layers[layerId] = packed.object;
      if (packed.uploaded) uploaded++;
    }
    const owner = this.#o.teams.ownerOf(templateId);
    const record: TemplateRecord = {
      v: TEMPLATE_RECORD_VERSION,
      templateId,
      aliases: [...manifest.aliases],
      kind: owner.kind,
      team: owner.team,
      node: this.#o.nodeName,
      manifest,
      layers,
      publishedAt: new Date().toISOString(),
    };
    const bytes = encodeTemplateRecord(record);
    // Revision-checked: a record written meanwhile by another node makes this one fail, and the next heartbeat decides again.
    const revision = await checkedPut(this.#kv, templateId, bytes, existing?.revision ?? ABSENT);
    this.#mirror.remember(templateId, record, revision);
    this.#published.set(templateId, fp);
    this.#o.logger.info({ templateId, layers: Object.keys(layers).length, uploaded, ms: Date.now() - started }, "published a template to the cluster");
  }

  /** The layer's archive in the object store (sent only when no object has its digest). */
  async #upload(layerId: string): Promise<{ object: PackedLayer; uploaded: boolean }> {
    const known = this.#digests.get(layerId);
    if (known && (await this.#objects.info(known.digest))?.deleted === false) return { object: known, uploaded: false };
    const file = join(this.#transfers, `pack-${layerId}-${process.pid}.tar`);
    try {
      const packed = await packLayer(this.#o.local.layerPath(layerId), file);
      this.#digests.set(layerId, packed);
      const info = await this.#objects.info(packed.digest);
      if (info && !info.deleted) return { object: packed, uploaded: false };
      const stream = Readable.toWeb(createReadStream(file)) as unknown as ReadableStream<Uint8Array>;
      await this.#objects.put({ name: packed.digest, description: `layer ${layerId}` }, stream);
      return { object: packed, uploaded: true };
    } finally {
      await rm(file, { force: true });
    }
  }

  /** Layer id → shipped template and position, for the shipped templates this node has. */
  #shippedLayers(): Map<string, LayerSource> {
    const found = new Map<string, LayerSource>();
    for (const manifest of this.#o.local.list()) {
      const name = [manifest.templateId, ...manifest.aliases].find((n) => this.#o.shipped.has(n));
      if (name === undefined) continue;
      manifest.layers.forEach((layerId, index) => found.set(layerId, { shipped: name, index }));
    }
    return found;
  }

  async #unpublish(templateId: string): Promise<void> {
    const entry = await this.#kv.get(templateId);
    if (entry?.operation !== "PUT") return;
    await checkedDelete(this.#kv, templateId, entry.revision);
    this.#o.logger.info({ templateId }, "deleted a template's cluster record");
  }

  /**
   * Layers a published sandbox stands on (sandbox-moves.ts) are swept only once no move record names them: a
   * template deleted while a filesystem pause of it is published must still be resumable elsewhere.
   */
  holdLayers(held: () => Promise<Iterable<string>>): void {
    this.#held = held;
  }

  /** Delete the layer objects no record names (older than the grace: a publish uploads before it writes). */
  async #sweep(): Promise<void> {
    const named = new Set<string>();
    for (const record of this.records()) for (const source of Object.values(record.layers)) if ("digest" in source) named.add(source.digest);
    // A failure to read what moves hold throws: nothing is swept rather than something a move needs.
    for (const digest of (await this.#held?.()) ?? []) named.add(digest);
    const grace = this.#o.sweepGraceMs ?? SWEEP_GRACE_MS;
    for (const info of await this.#objects.list()) {
      if (info.deleted || named.has(info.name) || Date.now() - Date.parse(info.mtime) < grace) continue;
      await this.#objects.delete(info.name).catch((err: unknown) => this.#o.logger.warn({ err, object: info.name }, "could not delete a layer object"));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#stopListening();
    await this.settled().catch(() => undefined);
    this.#mirror.close();
  }
}

/** What says a manifest changed, whatever layer ids a node gave it. */
function fingerprint(m: TemplateManifest): string {
  return JSON.stringify([m.templateId, [...m.aliases].sort(), m.buildId ?? null, m.createdAt, m.tags ?? {}, Object.keys(m.builds ?? {}).sort()]);
}

function isShipped(m: TemplateManifest, shipped: ReadonlySet<string>): boolean {
  return shipped.has(m.templateId) || m.aliases.some((a) => shipped.has(a));
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}


