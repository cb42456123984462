// A node's record in the nodes bucket. Records are versioned (`v`) and read tolerantly: a node of an adjacent version
// may add fields, and a writer keeps the fields it does not know (see Membership), so a rolling upgrade loses nothing.
import { BurrowError, Code } from "@burrow/protocol";

/** 2: load carries capacity and templates (placement reads them); readers of 1 ignore them. */
export const NODE_RECORD_VERSION = 2;

export interface NodeLoad {
  /** The host's MemAvailable, in bytes. */
  freeMemoryBytes: number;
  /** Sandboxes running on the node now. */
  runningSandboxes: number;
  /** Each pool's ready sandboxes and target, by the template it keeps (empty: no pools, or none reported). */
  poolFill: PoolFillEntry[];
  /** Live sandboxes the node admits at most (its admission's maxSandboxes). Absent in version 1 records. */
  capacity?: number;
  /**
   * Ids and names (aliases) of the templates, snapshots included, the node can start sandboxes from: template layers
   * are node-local, so placement sends a create only where its template is. Absent in version 1 records.
   */
  templates?: string[];
}

export interface PoolFillEntry {
  template: string;
  ready: number;
  target: number;
}

export interface NodeRecord {
  v: number;
  name: string;
  /** Where other nodes reach its API and gateway (plain http). */
  apiUrl: string;
  /** Burrow's version on the node. */
  version: string;
  /** When the node's current process joined (ISO 8601). */
  startedAt: string;
  /** Cordoned nodes take no new sandboxes (placement skips them, their create route refuses); their sandboxes keep running. */
  cordoned: boolean;
  /** The node's own clock at its last heartbeat (informative: liveness is judged by the bucket's write time). */
  heartbeatAt: string;
  load: NodeLoad;
}

/** A record as the API answers it: the record plus what the reader judged from the bucket. */
export interface NodeView extends NodeRecord {
  /** `down`: no heartbeat written within the cluster's window. */
  status: "up" | "down";
  /** When the bucket stored the record last (the NATS server's clock). */
  lastSeenAt: string;
  revision: number;
}

export function encodeNodeRecord(record: NodeRecord & Record<string, unknown>): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

/** The record with every field it carries (unknown ones kept for the writer to pass on); refused when it is not one. */
export function decodeNodeRecord(bytes: Uint8Array): NodeRecord & Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new BurrowError(Code.DataLoss, "a node record is not JSON", { cause, reason: "bad_node_record" });
  }
  const r = value as Partial<NodeRecord> | null;
  if (!r || typeof r !== "object" || typeof r.v !== "number" || typeof r.name !== "string" || typeof r.apiUrl !== "string") {
    throw new BurrowError(Code.DataLoss, "a node record lacks v, name or apiUrl", { reason: "bad_node_record" });
  }
  return { cordoned: false, version: "", startedAt: "", heartbeatAt: "", load: { freeMemoryBytes: 0, runningSandboxes: 0, poolFill: [] }, ...r } as NodeRecord &
    Record<string, unknown>;
}
