// NATS failures as BurrowErrors, told apart by class and JetStream API code, never by message text.
import { JetStreamApiError } from "@nats-io/jetstream";
import { BurrowError, Code } from "@burrow/protocol";

/** JetStream's "wrong last sequence": a revision check failed (someone wrote the key first). */
const WRONG_LAST_SEQUENCE = 10071;

/** JetStream refused a write whose expected sequence (a key's revision or the stream's last) has moved. */
export function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === WRONG_LAST_SEQUENCE;
}

/** A checked write (cluster-kv.ts) found its key changed: someone else wrote it first. */
export class KeyChangedError extends Error {
  constructor(
    readonly bucket: string,
    readonly key: string,
    readonly found: number,
  ) {
    super(`key ${key} of bucket ${bucket} is at revision ${found}, not the one expected`);
    this.name = "KeyChangedError";
  }
}

/** Someone else wrote the key first: a checked write's KeyChangedError, or JetStream's own per-key refusal. */
export function isRevisionConflict(err: unknown): boolean {
  return err instanceof KeyChangedError || isWrongLastSequence(err);
}

export function clusterError(err: unknown, what: string): BurrowError {
  if (err instanceof BurrowError) return err;
  if (isRevisionConflict(err)) return new BurrowError(Code.Aborted, `${what}: changed by another writer`, { cause: err, reason: "revision_conflict" });
  if (err instanceof Error && (err.name === "ClosedConnectionError" || err.name === "ConnectionError" || err.name === "TimeoutError")) {
    return new BurrowError(Code.Unavailable, `${what}: the cluster's NATS servers are unreachable (${err.message})`, { cause: err, reason: "cluster_unavailable" });
  }
  return BurrowError.from(err, Code.Internal);
}
