import { BurrowError, Code } from "@burrow/protocol";
// How much the sandbox event stream keeps. Every event is also stored (fs floods, process output), so the stream
// needs a byte cap beside its age limit or one busy sandbox fills the disk within a day.

/** @default 24 h */
export const DEFAULT_SANDBOX_EVENT_MAX_AGE_MS = 86_400_000;
/** @default 1 GiB */
export const DEFAULT_SANDBOX_EVENT_MAX_BYTES = 1024 ** 3;

export interface SandboxEventStreamLimits {
  /** Events older than this are discarded. @default 24 h (env BURROW_EVENT_STREAM_MAX_AGE_MS) */
  maxAgeMs?: number;
  /** Past this many stored bytes the oldest events are discarded. @default 1 GiB (env BURROW_EVENT_STREAM_MAX_BYTES) */
  maxBytes?: number;
}

/**
 * The limits to apply: given values, then the environment, then the defaults. The server and the trigger engine both
 * ensure the stream, each without options; reading the environment here keeps the two from resetting each other.
 */
export function sandboxEventStreamLimits(opts: SandboxEventStreamLimits = {}, env: NodeJS.ProcessEnv = process.env): Required<SandboxEventStreamLimits> {
  return {
    maxAgeMs: opts.maxAgeMs ?? positive(env, "BURROW_EVENT_STREAM_MAX_AGE_MS") ?? DEFAULT_SANDBOX_EVENT_MAX_AGE_MS,
    maxBytes: opts.maxBytes ?? positive(env, "BURROW_EVENT_STREAM_MAX_BYTES") ?? DEFAULT_SANDBOX_EVENT_MAX_BYTES,
  };
}

function positive(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new BurrowError(Code.InvalidArgument, `${name} must be a positive integer, got "${raw}"`);
  return n;
}
