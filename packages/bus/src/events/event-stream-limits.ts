import { BurrowError, Code } from "@burrow/protocol";
// How much the sandbox event stream keeps. Every event is also stored (fs floods, process output), so the stream
// needs a byte cap beside its age limit or one busy sandbox fills the disk within a day.

/** @default 24 h */
export const DEFAULT_SANDBOX_EVENT_MAX_AGE_MS = 86_400_000;
/** @default 1 GiB */
export const DEFAULT_SANDBOX_EVENT_MAX_BYTES = 1024 ** 3;

export interface SandboxEventStreamLimits {
  /** Events older than this are discarded. @default 24 h */
  maxAgeMs?: number;
  /** Past this many stored bytes the oldest events are discarded. @default 1 GiB */
  maxBytes?: number;
}

/**
 * The limits to apply: the given values, else the defaults. Every party that ensures the stream (the server, each
 * trigger engine) must pass the same limits, or the last one to start resets the others'; the server resolves them
 * once from its configuration and hands them to both.
 */
export function sandboxEventStreamLimits(opts: SandboxEventStreamLimits = {}): Required<SandboxEventStreamLimits> {
  return {
    maxAgeMs: positive("maxAgeMs", opts.maxAgeMs) ?? DEFAULT_SANDBOX_EVENT_MAX_AGE_MS,
    maxBytes: positive("maxBytes", opts.maxBytes) ?? DEFAULT_SANDBOX_EVENT_MAX_BYTES,
  };
}

function positive(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value <= 0) throw new BurrowError(Code.InvalidArgument, `${name} must be a positive integer, got ${value}`);
  return value;
}
