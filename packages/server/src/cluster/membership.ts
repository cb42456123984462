// This node's place in the cluster: its record in the nodes bucket, rewritten on every heartbeat with its load, and
// everyone's records as the bucket's watch brings them. A node is down when the bucket has not stored a heartbeat of
// it within the window; the judgement uses the bucket's write time, so nodes' clocks need not agree with each other.
// A silence that may be the store's own is not a node's: when this node's heartbeats could not be stored for a while
// (JetStream electing a leader after a server died, this node's connection moving to another server, this process
// starved), every other node gets a whole window again from the moment its own are stored again — their heartbeats
// were held up by the same stall, and a live node reported lost loses its sandboxes' routes until it takes them back.
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { clusterError, isRevisionConflict } from "./cluster-errors.js";
import { ABSENT, checkedPut } from "./cluster-kv.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import { randomBytes } from "node:crypto";
import { ForwardSigning } from "./forwarded-header.js";
import { decodeNodeRecord, encodeNodeRecord, NODE_RECORD_VERSION, type NodeLoad, type NodeRecord, type NodeView } from "./node-record.js";
import { WatchedBucket, type MirroredEntry } from "./watched-bucket.js";

/** Read-modify-write attempts before a cordon gives up on a record that keeps changing under it. */
const MAX_ATTEMPTS = 5;

type StoredRecord = NodeRecord & Record<string, unknown>;

export interface MembershipOptions {
  kv: KV;
  nodeName: string;
  version: string;
  heartbeatMs: number;
  downAfterMs: number;
  load: () => Promise<NodeLoad>;
  logger: Logger;
  /**
   * How this node marks what it sends to other nodes (forwarded-header.ts), keyed from the cluster's secret; without
   * it a key of this node's own (no other node accepts what it forwards: for membership alone).
   */
  signing?: ForwardSigning;
  /**
   * Called when this node's own heartbeats stop coming back through the watch although they are written: the
   * cluster's watches have gone silent and must be restarted. Called at most once per down window.
   */
  onStaleWatch?: () => Promise<void>;
}

export class Membership {
  readonly #o: MembershipOptions;
  readonly #startedAt = new Date().toISOString();
  #mirror!: WatchedBucket<StoredRecord>;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  /** Every heartbeat not yet finished (a beat on reconnect runs beside one still waiting on the old connection). */
  readonly #inFlight = new Set<Promise<void>>();
  #apiUrl = "";
  /** This node's last written revision and when, to tell a silent watch from a slow one. */
  #written: { revision: number; at: number } | undefined;
  #lastRestart = 0;
  /** When this node's last heartbeat was stored (its clock), and since when they have been stored without a stall. */
  #lastStoredAt = 0;
  #storingSince = 0;

  private constructor(opts: MembershipOptions) {
    this.#o = opts;
  }

  /** Start mirroring the nodes bucket (the cluster's nodes are known from here on, this one not yet). */
  static async open(opts: MembershipOptions): Promise<Membership> {
    const m = new Membership(opts);
    m.#mirror = await WatchedBucket.open(opts.kv, decodeNodeRecord, opts.logger, "nodes");
    return m;
  }

  /** Write this node's record with where it is reached (keeping a cordon set while it was away), then beat. */
  async join(apiUrl: string): Promise<void> {
    this.#apiUrl = apiUrl;
    await whenClusterAnswers(`join as node ${this.#o.nodeName}`, () => this.#writeOwn(), { logger: this.#o.logger });
    this.#timer = setInterval(() => {
      // One heartbeat at a time: a slow NATS must not pile writes up.
      if (this.#beating) return;
      this.#checkWatch();
      this.#beat();
    }, this.#o.heartbeatMs);
    this.#timer.unref();
  }

  /**
   * Beat now, even while a heartbeat is in flight: for when the connection to NATS was re-established. A request
   * sent before the server went waits for its whole timeout (5 s), longer than a short window, and meanwhile this
   * live node looks down to the others.
   */
  beatNow(): void {
    if (this.#timer === undefined) return;
    this.#beat();
  }

  #beat(): void {
    const beating = this.#writeOwn()
      .catch((err: unknown) => this.#o.logger.warn({ err }, "cluster heartbeat failed"))
      .finally(() => {
        this.#inFlight.delete(beating);
        if (this.#beating === beating) this.#beating = undefined;
      });
    this.#beating = beating;
    this.#inFlight.add(beating);
  }

  get nodeName(): string {
    return this.#o.nodeName;
  }

  /** How this node marks (signs) what it sends to other nodes, and checks what they send. */
  get signing(): ForwardSigning {
    return (this.#o.signing ??= new ForwardSigning(randomBytes(32), this.#o.nodeName));
  }

  /** Every node the bucket knows, by name. */
  list(now = Date.now()): NodeView[] {
    return [...this.#mirror.entries()].map(([, entry]) => this.#view(entry, now)).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** A node's view, from the mirror. */
  node(name: string, now = Date.now()): NodeView | undefined {
    const entry = this.#mirror.get(name);
    return entry ? this.#view(entry, now) : undefined;
  }

  /** Set or clear a node's cordon with a revision check, so that a heartbeat written meanwhile is not lost (nor the cordon). */
  async setCordoned(name: string, cordoned: boolean): Promise<NodeView> {
    for (let attempt = 1; ; attempt++) {
      const entry = await this.#o.kv.get(name).catch((err: unknown) => Promise.reject(clusterError(err, `read node ${name}`)));
      if (!entry || entry.operation !== "PUT") throw new BurrowError(Code.NotFound, `node "${name}" is not in the cluster`, { reason: "node_not_found" });
      const record = { ...decodeNodeRecord(entry.value), cordoned };
      let revision: number;
      try {
        revision = await checkedPut(this.#o.kv, name, encodeNodeRecord(record), entry.revision);
      } catch (err) {
        // Written meanwhile (a heartbeat), or read from a replica that had not caught up: read again.
        if (isRevisionConflict(err) && attempt < MAX_ATTEMPTS) continue;
        throw clusterError(err, `${cordoned ? "cordon" : "uncordon"} node ${name}`);
      }
      // Answered from what was written, not read back: a read may be served by a replica still behind this write.
      this.#mirror.remember(name, record, revision);
      return this.#view({ value: record, revision, created: new Date() }, Date.now());
    }
  }

  /**
   * Whether the watch brings this node's own heartbeats back in time (none written two heartbeats ago is still
   * missing). When it does not, every record in the mirror may be old, this node's own a moment less than others':
   * who is down cannot be told from it.
   */
  watchIsCurrent(now = Date.now()): boolean {
    const written = this.#written;
    if (!written || now - written.at < 2 * this.#o.heartbeatMs) return true;
    return (this.#mirror.get(this.#o.nodeName)?.revision ?? 0) >= written.revision;
  }

  /** Restart the mirrors' watches when this node's own write from two heartbeats ago has not come back through them. */
  #checkWatch(): void {
    const now = Date.now();
    const written = this.#written;
    if (!written || this.watchIsCurrent(now)) return;
    if (now - this.#lastRestart < this.#o.downAfterMs) return;
    this.#lastRestart = now;
    this.#o.logger.warn({ writtenRevision: written.revision, mirrored: this.#mirror.get(this.#o.nodeName)?.revision }, "cluster watches went silent; restarting them");
    // In the background: a new watch may wait for JetStream's leaders as long as writes do, and heartbeats must go on.
    void Promise.all([this.#mirror.restart(), this.#o.onStaleWatch?.()]).catch((err: unknown) => this.#o.logger.warn({ err }, "restarting the cluster's watches failed"));
  }

  /** Stop the heartbeat. The record stays: others see the node go down after the window, as they would a crash. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined; // a reconnect after this beats no more (beatNow)
    await Promise.all(this.#inFlight);
    this.#mirror.close();
  }

  #view(entry: MirroredEntry<StoredRecord>, now: number): NodeView {
    const { value } = entry;
    return {
      v: value.v,
      name: value.name,
      apiUrl: value.apiUrl,
      version: value.version,
      startedAt: value.startedAt,
      cordoned: value.cordoned,
      heartbeatAt: value.heartbeatAt,
      load: value.load,
      status: now - this.#heardAt(value.name, entry.created.getTime()) > this.#o.downAfterMs ? "down" : "up",
      lastSeenAt: entry.created.toISOString(),
      revision: entry.revision,
    };
  }

  /**
   * When a node counts as last heard of: when its record was stored, or — for another node — when this node's own
   * heartbeats were stored again after a stall, whichever is later. This node's own record keeps its stored time: its
   * age is how a silent watch is told (lost-sweep.ts).
   */
  #heardAt(name: string, storedAt: number): number {
    return name === this.#o.nodeName ? storedAt : Math.max(storedAt, this.#storingSince);
  }

  /** Note a stored heartbeat; a gap of half a window since the last one was a stall. */
  #noteStored(): void {
    const now = Date.now();
    if (this.#lastStoredAt !== 0 && now - this.#lastStoredAt > this.#o.downAfterMs / 2) {
      this.#storingSince = now;
      this.#o.logger.warn({ stalledMs: now - this.#lastStoredAt }, "cluster heartbeats were not stored for a while; every node gets a whole window again");
    }
    this.#lastStoredAt = now;
  }

  /** Rewrite this node's record over whatever is stored (a cordon and fields of newer versions are kept). */
  async #writeOwn(): Promise<void> {
    const { kv, nodeName } = this.#o;
    const load = await this.#o.load();
    for (let attempt = 1; ; attempt++) {
      const entry = await kv.get(nodeName);
      const stored = entry?.operation === "PUT" ? safeDecode(entry.value) : undefined;
      const record: StoredRecord = {
        ...stored,
        v: Math.max(stored?.v ?? 0, NODE_RECORD_VERSION),
        name: nodeName,
        apiUrl: this.#apiUrl,
        version: this.#o.version,
        startedAt: this.#startedAt,
        cordoned: stored?.cordoned ?? false,
        heartbeatAt: new Date().toISOString(),
        load,
      };
      try {
        const revision = await checkedPut(kv, nodeName, encodeNodeRecord(record), entry?.revision ?? ABSENT);
        this.#noteStored();
        // Only the first write whose return is not yet mirrored counts: it is the one the watch is late with.
        const mirrored = this.#mirror.get(nodeName)?.revision ?? 0;
        if (!this.#written || this.#written.revision <= mirrored) this.#written = { revision, at: Date.now() };
        return;
      } catch (err) {
        // A cordon landed between the read and the write: read again so that it is kept.
        if (isRevisionConflict(err) && attempt < MAX_ATTEMPTS) continue;
        throw err;
      }
    }
  }
}

function safeDecode(bytes: Uint8Array): StoredRecord | undefined {
  try {
    return decodeNodeRecord(bytes);
  } catch {
    return undefined;
  }
}
