// Which node holds each checkpoint: checkpoints are files on the node their sandbox ran on, and the routes that name a
// checkpoint (/burrow/v1/checkpoints/{id}: read, branch, delete) carry no sandbox id for the forwarder to look up.
// The node that takes a checkpoint records it in **`burrow_checkpoints`** (checkpoint id → node, sandbox, team) before
// the create answers, and the node that deletes one removes its record; any node reads the record to forward such a
// request (forwarder.ts). A connection of its own: the node's cluster connection is ClusterNode's.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { clusterError } from "./cluster-errors.js";
import { checkedDelete } from "./cluster-kv.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import { openClusterBucket } from "./cluster-stores.js";

export const CHECKPOINTS_BUCKET = "burrow_checkpoints";
/** What a KV key may hold (NATS subjects' tokens); other ids are never recorded, so never forwarded. */
const KEY = /^[-_=a-zA-Z0-9]{1,200}$/;
const RECORD_VERSION = 1;

export interface CheckpointRecord {
  v: number;
  node: string;
  sandboxId: string;
  /** The team of the sandbox it was taken of; null: the default team. */
  teamId: string | null;
}

export class CheckpointRecords {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    readonly nodeName: string,
    private readonly logger: Logger,
  ) {}

  static async open(o: { servers: readonly string[]; nodeName: string; replicas: number; logger: Logger }): Promise<CheckpointRecords> {
    let nc: NatsConnection;
    try {
      nc = await connect({ servers: [...o.servers], name: `burrow-node-${o.nodeName}-checkpoints`, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    } catch (err) {
      throw clusterError(err, `connect to ${o.servers.join(",")}`);
    }
    try {
      const kvm = new Kvm(nc);
      const kv = await whenClusterAnswers(`open bucket ${CHECKPOINTS_BUCKET}`, () => openClusterBucket(kvm, CHECKPOINTS_BUCKET, o.replicas), { logger: o.logger });
      return new CheckpointRecords(nc, kv, o.nodeName, o.logger);
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw clusterError(err, `open bucket ${CHECKPOINTS_BUCKET}`);
    }
  }

  /** Records a checkpoint taken here. */
  async taken(checkpointId: string, sandboxId: string, teamId: string | null): Promise<void> {
    if (!KEY.test(checkpointId)) return;
    const record: CheckpointRecord = { v: RECORD_VERSION, node: this.nodeName, sandboxId, teamId };
    try {
      await this.kv.put(checkpointId, JSON.stringify(record));
    } catch (err) {
      throw clusterError(err, `record checkpoint ${checkpointId}`);
    }
  }

  /** Removes the record of a checkpoint deleted here (only while it names this node). */
  async deleted(checkpointId: string): Promise<void> {
    if (!KEY.test(checkpointId)) return;
    try {
      const entry = await this.kv.get(checkpointId);
      if (entry?.operation !== "PUT" || entry.json<CheckpointRecord>().node !== this.nodeName) return;
      await checkedDelete(this.kv, checkpointId, entry.revision);
    } catch (err) {
      this.logger.warn({ err, checkpointId }, "could not remove a checkpoint's record");
    }
  }

  /** The node holding a checkpoint; undefined: no record (not a checkpoint of the cluster's, or from before it). */
  async lookup(checkpointId: string): Promise<CheckpointRecord | undefined> {
    if (!KEY.test(checkpointId)) return undefined;
    try {
      const entry = await this.kv.get(checkpointId);
      return entry?.operation === "PUT" ? entry.json<CheckpointRecord>() : undefined;
    } catch (err) {
      throw clusterError(err, `read checkpoint ${checkpointId}'s record`);
    }
  }

  async close(): Promise<void> {
    await this.nc.close().catch(() => undefined);
  }
}
