// Who reports a down node's sandboxes lost: one marker per node in the losses bucket, taken with a revision check so
// that two surviving nodes that both judge a node down never both report it. A marker names the node's incarnation
// (the start time in its record), so a node that comes back and dies again is reported again; a marker left unfinished
// by a taker that went down itself may be taken over.
import type { KV } from "@nats-io/kv";
import { clusterError, isRevisionConflict } from "./cluster-errors.js";
import { ABSENT, checkedPut } from "./cluster-kv.js";

export const LOSS_MARKER_VERSION = 1;

export interface LossMarker {
  v: number;
  /** The node reported lost. */
  node: string;
  /** Its record's start time when it was judged down: which of its runs this marker is about. */
  incarnation: string;
  /** The node reporting it. */
  takenBy: string;
  takenAt: string;
  /** Every record of the node was marked lost and every event sent. */
  done: boolean;
}

/** A marker this node holds: finish it when the report is complete. */
export interface TakenMarker {
  marker: LossMarker;
  revision: number;
}

function encode(marker: LossMarker): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(marker));
}

function decode(bytes: Uint8Array): LossMarker | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<LossMarker> | null;
    if (!value || typeof value.node !== "string" || typeof value.incarnation !== "string" || typeof value.takenBy !== "string") return undefined;
    return { v: value.v ?? LOSS_MARKER_VERSION, node: value.node, incarnation: value.incarnation, takenBy: value.takenBy, takenAt: value.takenAt ?? "", done: value.done === true };
  } catch {
    return undefined;
  }
}

export interface TakeMarkerOptions {
  node: string;
  incarnation: string;
  me: string;
  /** Whether a node is up now: a marker of this incarnation held unfinished by a node that is not may be taken over. */
  isUp: (node: string) => boolean;
}

/**
 * Take the marker for the node's incarnation: `done` when the report was made, `held` when another node is making it
 * (or took it first). Exactly one of several nodes calling this at once gets it: creates and updates both name the
 * revision they replace.
 */
export async function takeLossMarker(kv: KV, opts: TakeMarkerOptions): Promise<TakenMarker | "done" | "held"> {
  const marker: LossMarker = { v: LOSS_MARKER_VERSION, node: opts.node, incarnation: opts.incarnation, takenBy: opts.me, takenAt: new Date().toISOString(), done: false };
  try {
    const entry = await kv.get(opts.node);
    if (!entry || entry.operation !== "PUT") {
      // No marker yet (or one deleted): create fails if another node created one first; a deleted key is replaced by revision.
      const revision = await checkedPut(kv, opts.node, encode(marker), entry?.revision ?? ABSENT);
      return { marker, revision };
    }
    const held = decode(entry.value);
    if (held && held.incarnation === opts.incarnation) {
      if (held.done) return "done";
      // This node's own unfinished marker (it restarted mid-report) is taken again: marking is idempotent.
      if (held.takenBy !== opts.me && opts.isUp(held.takenBy)) return "held";
    }
    return { marker, revision: await checkedPut(kv, opts.node, encode(marker), entry.revision) };
  } catch (err) {
    if (isRevisionConflict(err)) return "held";
    throw clusterError(err, `take the loss marker of node ${opts.node}`);
  }
}

/** Mark the report complete; false when someone took the marker over meanwhile. */
export async function finishLossMarker(kv: KV, taken: TakenMarker): Promise<boolean> {
  try {
    await checkedPut(kv, taken.marker.node, encode({ ...taken.marker, done: true }), taken.revision);
    return true;
  } catch (err) {
    if (isRevisionConflict(err)) return false;
    throw clusterError(err, `finish the loss marker of node ${taken.marker.node}`);
  }
}
