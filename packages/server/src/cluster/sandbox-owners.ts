// Which node owns each sandbox: one record per sandbox id in the owners bucket, written by the node that created the
// sandbox and removed by it when the sandbox ends. Writes are revision-checked: a create never replaces another
// node's record, and a node removes only a record that is still its own. Lookups read a mirror kept by a watch, with
// a direct read on a miss (a sandbox created elsewhere a moment ago may not have been mirrored yet).
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { clusterError, isRevisionConflict } from "./cluster-errors.js";
import { WatchedBucket } from "./watched-bucket.js";

export const OWNER_RECORD_VERSION = 1;

export interface OwnerRecord {
  v: number;
  node: string;
  claimedAt: string;
}

function decodeOwner(bytes: Uint8Array): OwnerRecord {
  const value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<OwnerRecord> | null;
  if (!value || typeof value.node !== "string") throw new BurrowError(Code.DataLoss, "an owner record lacks its node", { reason: "bad_owner_record" });
  return { v: value.v ?? OWNER_RECORD_VERSION, node: value.node, claimedAt: value.claimedAt ?? "" };
}

/** Sandbox ids are lower-case letters and digits; anything else is no sandbox and never a key. */
const SANDBOX_ID = /^[a-z0-9]{1,64}$/;

export class SandboxOwners {
  private constructor(
    private readonly kv: KV,
    private readonly nodeName: string,
    private readonly mirror: WatchedBucket<OwnerRecord>,
  ) {}

  static async open(kv: KV, nodeName: string, logger: Logger): Promise<SandboxOwners> {
    return new SandboxOwners(kv, nodeName, await WatchedBucket.open(kv, decodeOwner, logger, "sandbox owners"));
  }

  /** The owning node as mirrored, without a round trip; undefined when the mirror has no record. */
  cached(sandboxId: string): string | undefined {
    return this.mirror.get(sandboxId)?.value.node;
  }

  /** The owning node, from the bucket itself when the mirror has no record. */
  async lookup(sandboxId: string): Promise<string | undefined> {
    const cached = this.cached(sandboxId);
    if (cached !== undefined || !SANDBOX_ID.test(sandboxId)) return cached;
    try {
      const entry = await this.kv.get(sandboxId);
      return entry ? this.mirror.apply(entry)?.value.node : undefined;
    } catch (err) {
      throw clusterError(err, `look up the owner of sandbox ${sandboxId}`);
    }
  }

  /** Record this node as the sandbox's owner; AlreadyExists when another node's record is there. Idempotent. */
  async claim(sandboxId: string): Promise<void> {
    const record: OwnerRecord = { v: OWNER_RECORD_VERSION, node: this.nodeName, claimedAt: new Date().toISOString() };
    try {
      const revision = await this.kv.create(sandboxId, new TextEncoder().encode(JSON.stringify(record)));
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
      await this.kv.delete(sandboxId, { previousSeq: entry.revision });
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
    const ids: string[] = [];
    try {
      for await (const key of await this.kv.keys()) {
        const entry = await this.kv.get(key);
        if (entry?.operation === "PUT" && this.mirror.apply(entry)?.value.node === this.nodeName) ids.push(key);
      }
    } catch (err) {
      throw clusterError(err, "list this node's owner records");
    }
    return ids.sort();
  }

  /** Watch the bucket anew (see WatchedBucket.restart). */
  restartWatch(): Promise<void> {
    return this.mirror.restart();
  }

  close(): void {
    this.mirror.close();
  }
}
