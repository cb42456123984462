// How much of each sandbox's log the server keeps, and for how long after the sandbox ends.
import { resolvePositiveLimits } from "../positive-limits.js";

export interface SandboxLogLimits {
  /** Entries kept per sandbox (the oldest go first). @default 2000 (env BURROW_SANDBOX_LOG_MAX_LINES) */
  maxLines: number;
  /** Bytes of messages and fields kept per sandbox. @default 262144 (env BURROW_SANDBOX_LOG_MAX_BYTES) */
  maxBytes: number;
  /** How long an ended sandbox's logs stay readable. @default 3600000 (env BURROW_SANDBOX_LOG_RETENTION_MS) */
  retentionMs: number;
  /** How often running sandboxes' logs are read (requests for them read at once). @default 1000 (env BURROW_SANDBOX_LOG_POLL_MS) */
  pollIntervalMs: number;
}

export const DEFAULT_SANDBOX_LOG_LIMITS: Readonly<SandboxLogLimits> = Object.freeze({
  maxLines: 2000,
  maxBytes: 256 * 1024,
  retentionMs: 3_600_000,
  pollIntervalMs: 1000,
});

const ENV: Record<keyof SandboxLogLimits, string> = {
  maxLines: "BURROW_SANDBOX_LOG_MAX_LINES",
  maxBytes: "BURROW_SANDBOX_LOG_MAX_BYTES",
  retentionMs: "BURROW_SANDBOX_LOG_RETENTION_MS",
  pollIntervalMs: "BURROW_SANDBOX_LOG_POLL_MS",
};

export function resolveSandboxLogLimits(input: Partial<SandboxLogLimits> | undefined, env: NodeJS.ProcessEnv): SandboxLogLimits {
  return resolvePositiveLimits({ ...DEFAULT_SANDBOX_LOG_LIMITS }, ENV, input, env);
}
