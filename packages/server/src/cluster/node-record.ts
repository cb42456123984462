// A node's record in the nodes bucket. Records are versioned (`v`) and read tolerantly: a node of an adjacent version
// may add fields, and a writer keeps the fields it does not know (see Membership), so a rolling upgrade loses nothing.
import { BurrowError, Code, type NodeRecord } from "@burrow/protocol";

/** 2: load carries capacity and templates (placement reads them); readers of 1 ignore them. */
export const NODE_RECORD_VERSION = 2;

export type { NodeCpu, NodeLoad, NodeRecord, NodeView, PoolFillEntry } from "@burrow/protocol";

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
