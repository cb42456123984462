// Which node owns each sandbox: one record per sandbox id in the owners bucket, written by the node that created the
// sandbox and removed by it when the sandbox ends. Writes are revision-checked: a create never replaces another
// node's record, and a node removes only a record that is still its own. Lookups read a mirror kept by a watch, with
// a direct read on a miss (a sandbox created elsewhere a moment ago may not have been mirrored yet). A record of a
// node that went down is kept, marked lost (lost-sweep.ts): the id stays taken, requests for it are answered "not
// found", and the node, if it comes back with the sandbox, takes it back (reconcile.ts).
import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { kvStoredKeys } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import { checkedCreate, checkedDelete, checkedPut, OWNERS_BUCKET, type ClusterKv } from "./cluster-kv.js";
import { clusterError, isRevisionConflict } from "./cluster-errors.js";
import { WatchedBucket } from "./watched-bucket.js";

/**
 * 2: records may be marked lost (`lostAt`, `killedAt`) and name their template. Readers of 1 see a lost record as
 * the node's. 3: records say the sandbox's team and size and whether it is paused (owner-facts.ts), for the `lost`
 * events of its team and the team's quota usage across nodes; readers of 2 keep these fields and ignore them.
 */
export const OWNER_RECORD_VERSION = 3;

/** What an owner record says of its sandbox beyond its node (version 3), as the owning node knows it. */
export interface OwnerFacts {
  /** The team's shared id; null: the owning node's default team (each node has its own, see team-sync.ts). */
  teamId: string | null;
  vcpu: number;
  memoryMB: number;
  /** Paused sandboxes hold no vCPU or memory quota. */
  paused: boolean;
  /** Its disk limit, MiB (a team's disk quota counts it, paused or not); absent from records of older nodes. */
  diskMB?: number;
}

export interface OwnerRecord {
  v: number;
  node: string;
  claimedAt: string;
  /** The sandbox's template, for the events other nodes publish about it (lost). */
  templateId?: string;
  /** Set when the node was judged down and its sandboxes reported lost (ISO 8601); absent while the node has it. */
  lostAt?: string;
  /** A kill asked while it was lost (lost-kill.ts): the node, back, ends it instead of taking it back. */
  killedAt?: string;
  /** Version 3 (owner-facts.ts); absent on records written before, or until the owner has written them. */
  teamId?: string | null;
  vcpu?: number;
  memoryMB?: number;
  paused?: boolean;
  diskMB?: number;
  /**
   * sandbox-moves.ts: the digest of the filesystem-paused sandbox's writable layer once everything a resume on another
   * node needs is published; absent while it runs or until publishing finished. Readers of 3 keep it.
   */
  movable?: string;
  /** The node the sandbox was moved from, by the node that took it over. */
  movedFrom?: string;
  /** Why this filesystem pause was not published for moves (its writable layer over the cluster's move limit). */
  moveRefused?: string;
}

/** A record as stored, with the revision a revision-checked write must name. */
export interface StoredOwner {
  record: OwnerRecord;
  revision: number;
}

export function decodeOwner(bytes: Uint8Array): OwnerRecord {
  const value = JSON.parse(new TextDecoder().decode(bytes)) as (Partial<OwnerRecord> & Record<string, unknown>) | null;
  if (!value || typeof value.node !== "string") throw new BurrowError(Code.DataLoss, "an owner record lacks its node", { reason: "bad_owner_record" });
  // Fields of newer versions are kept, for a writer to pass on.
  return { ...value, v: value.v ?? 1, node: value.node, claimedAt: value.claimedAt ?? "" };
}

function encodeOwner(record: OwnerRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

/** Sandbox ids are lower-case letters and digits; anything else is no sandbox and never a key. */
const SANDBOX_ID = /^[a-z0-9]{1,64}$/;

export class SandboxOwners {
  private constructor(
    private readonly kv: KV,
    private readonly jsm: JetStreamManager,
    private readonly nodeName: string,
    private readonly mirror: WatchedBucket<OwnerRecord>,
  ) {}

  static async open(cluster: Pick<ClusterKv, "owners" | "jsm">, nodeName: string, logger: Logger): Promise<SandboxOwners> {
    const kv = cluster.owners;
    return new SandboxOwners(kv, cluster.jsm, nodeName, await WatchedBucket.open(kv, decodeOwner, logger, "sandbox owners"));
  }

  /** The owning node as mirrored, without a round trip; undefined when the mirror has no record. */
  cached(sandboxId: string): string | undefined {
    return this.mirror.get(sandboxId)?.value.node;
  }

  /** The record as mirrored (lost or not), without a round trip. */
  cachedRecord(sandboxId: string): OwnerRecord | undefined {
    return this.mirror.get(sandboxId)?.value;
  }

  /** The owning node, from the bucket itself when the mirror has no record. */
  async lookup(sandboxId: string): Promise<string | undefined> {
    return (await this.lookupRecord(sandboxId))?.node;
  }

  /** The record, from the bucket itself when the mirror has none. */
  async lookupRecord(sandboxId: string): Promise<OwnerRecord | undefined> {
    const cached = this.cachedRecord(sandboxId);
    if (cached !== undefined || !SANDBOX_ID.test(sandboxId)) return cached;
    try {
      const entry = await this.kv.get(sandboxId);
      return entry ? this.mirror.apply(entry)?.value : undefined;
    } catch (err) {
      throw clusterError(err, `look up the owner of sandbox ${sandboxId}`);
    }
  }

  /** The record and its revision, read from the bucket (not the mirror): for a revision-checked write after it. */
  async read(sandboxId: string): Promise<StoredOwner | undefined> {
    try {
      const entry = await this.kv.get(sandboxId);
      const mirrored = entry ? this.mirror.apply(entry) : undefined;
      return entry && mirrored ? { record: mirrored.value, revision: entry.revision } : undefined;
    } catch (err) {
      throw clusterError(err, `read the owner record of sandbox ${sandboxId}`);
    }
  }

  /** Replace the record if it is still at `revision`; false when someone wrote it meanwhile. */
  async replace(sandboxId: string, record: OwnerRecord, revision: number): Promise<boolean> {
    try {
      const written = await checkedPut(this.kv, sandboxId, encodeOwner(record), revision);
      this.mirror.remember(sandboxId, record, written);
      return true;
    } catch (err) {
      if (isRevisionConflict(err)) return false;
      throw clusterError(err, `rewrite the owner record of sandbox ${sandboxId}`);
    }
  }

  /**
   * Record this node as the owner of a sandbox it has just made (a create, a fork's child, a checkpoint's branch).
   * Its id is new, so no record of it ever existed: the KV's own create holds for such a key on every nats-server
   * (2.9.10 checks an expected sequence of 0 when it applies the write; cluster-kv-checked.test.ts), and unlike a
   * checked write it does not wait for every other write of the bucket — a burst of creates would otherwise take
   * turns (30 claims at once: about 150 ms instead of 3 ms on three servers).
   */
  async claimNew(sandboxId: string, templateId?: string): Promise<void> {
    return this.claim(sandboxId, templateId, true);
  }

  /**
   * Record this node as the sandbox's owner; AlreadyExists when another node's record is there. Idempotent. For ids
   * that may have had a record before (a sandbox this node has at start): a checked create, since a create over a
   * deleted record is not atomic on nats-server before 2.9.21.
   */
  async claim(sandboxId: string, templateId?: string, neverRecorded = false): Promise<void> {
    const record: OwnerRecord = { v: OWNER_RECORD_VERSION, node: this.nodeName, claimedAt: new Date().toISOString(), ...(templateId ? { templateId } : {}) };
    try {
      const revision = neverRecorded ? await this.kv.create(sandboxId, encodeOwner(record)) : await checkedCreate(this.kv, sandboxId, encodeOwner(record));
      this.mirror.remember(sandboxId, record, revision);
      return;
    } catch (err) {
      if (!isRevisionConflict(err)) throw clusterError(err, `record the owner of sandbox ${sandboxId}`);
    }
    const owner = await this.lookup(sandboxId);
    if (owner === this.nodeName) return;
    throw new BurrowError(Code.AlreadyExists, `sandbox ${sandboxId} is already owned by node ${owner ?? "(unknown)"}`, { reason: "sandbox_owned_elsewhere" });
  }

  /** Remove the sandbox's record if it is still this node's (a revision-checked delete). */
  async release(sandboxId: string): Promise<void> {
    try {
      const entry = await this.kv.get(sandboxId);
      if (!entry || entry.operation !== "PUT") return;
      if (decodeOwner(entry.value).node !== this.nodeName) return;
      await checkedDelete(this.kv, sandboxId, entry.revision);
    } catch (err) {
      // Changed since it was read: whoever changed it owns it now.
      if (isRevisionConflict(err)) return;
      throw clusterError(err, `remove the owner record of sandbox ${sandboxId}`);
    }
  }

  /**
   * Sandbox ids the bucket says this node owns, read from the bucket itself (at start the mirror may not have all of
   * them yet): one read per key, done once when the node starts.
   */
  async mine(): Promise<string[]> {
    return [...(await this.ownedBy(this.nodeName)).keys()].sort();
  }

  /** Every record the mirror holds, by sandbox id (no round trip). */
  *cachedRecords(): Iterable<[string, OwnerRecord]> {
    for (const [id, entry] of this.mirror.entries()) yield [id, entry.value];
  }

  /**
   * Write what this node knows of its sandbox into its record (revision-checked, only when something changed and
   * the record is still this node's and not lost). False when there is no such record to write.
   */
  async describe(sandboxId: string, facts: OwnerFacts): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const stored = await this.read(sandboxId);
      if (!stored || stored.record.node !== this.nodeName || stored.record.lostAt !== undefined) return false;
      const { record } = stored;
      if (record.teamId === facts.teamId && record.vcpu === facts.vcpu && record.memoryMB === facts.memoryMB && (record.paused ?? false) === facts.paused && record.diskMB === facts.diskMB) return true;
      const next: OwnerRecord = { ...record, v: Math.max(record.v, OWNER_RECORD_VERSION), ...facts };
      if (await this.replace(sandboxId, next, stored.revision)) return true;
    }
    throw new BurrowError(Code.Aborted, `the owner record of sandbox ${sandboxId} kept changing while its facts were written`, { reason: "revision_conflict" });
  }

  /** Ids the mirror holds as `node`'s and marked lost. */
  cachedLost(node: string): string[] {
    return [...this.mirror.entries()].filter(([, e]) => e.value.node === node && e.value.lostAt !== undefined).map(([id]) => id);
  }

  /** Every record naming `node`, with its revision, read from the bucket itself: one read per key. */
  async ownedBy(node: string): Promise<Map<string, StoredOwner>> {
    const found = new Map<string, StoredOwner>();
    try {
      for (const key of await kvStoredKeys(this.jsm, OWNERS_BUCKET)) {
        const entry = await this.kv.get(key);
        const mirrored = entry?.operation === "PUT" ? this.mirror.apply(entry) : undefined;
        if (entry && mirrored?.value.node === node) found.set(key, { record: mirrored.value, revision: entry.revision });
      }
    } catch (err) {
      throw clusterError(err, `list the owner records of node ${node}`);
    }
    return found;
  }

  /** Watch the bucket anew (see WatchedBucket.restart). */
  restartWatch(): Promise<void> {
    return this.mirror.restart();
  }

  close(): void {
    this.mirror.close();
  }
}
