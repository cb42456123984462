import { BurrowError, Code } from "@burrow/protocol";

/** The error an aborted call rejects with: the signal's reason when it is already a BurrowError, else Canceled. */
export function abortError(signal: AbortSignal): BurrowError {
  return BurrowError.from(signal.reason ?? new DOMException("aborted", "AbortError"), Code.Canceled);
}

/**
 * The reason of a compare-and-set that lost (Aborted): another writer changed the key since the caller read it, so
 * the caller restarts its read-modify-write.
 */
export const REVISION_CONFLICT = "revision_conflict";
