import { resolvePositiveLimits } from "../positive-limits.js";
// How many filesystem events one sandbox may put on the bus. A loop writing files in a watched directory makes
// envd report tens of thousands of changes a second; each published event is a durable write on the server's only
// thread and a stored message for a day, so changes are merged per window and rate-limited per sandbox.

export interface FsEventLimits {
  /** Changes of one type to one path within this window are published as one event. @default 100 (env BURROW_FS_EVENT_WINDOW_MS) */
  windowMs: number;
  /** Events one sandbox may publish per second, sustained. @default 200 (env BURROW_FS_EVENTS_PER_SEC) */
  perSecond: number;
  /** Events one sandbox may publish at once after a quiet spell. @default 400 (env BURROW_FS_EVENT_BURST) */
  burst: number;
  /** Distinct (type, path) pairs held between windows; past it the least recently changed are dropped. @default 4096 */
  maxPending: number;
}

const DEFAULTS: FsEventLimits = { windowMs: 100, perSecond: 200, burst: 400, maxPending: 4096 };

const ENV: Partial<Record<keyof FsEventLimits, string>> = {
  windowMs: "BURROW_FS_EVENT_WINDOW_MS",
  perSecond: "BURROW_FS_EVENTS_PER_SEC",
  burst: "BURROW_FS_EVENT_BURST",
};

/** Given values, then the environment, then the defaults (positive-limits.ts). */
export function resolveFsEventLimits(input: Partial<FsEventLimits> = {}, env: NodeJS.ProcessEnv = {}): FsEventLimits {
  return resolvePositiveLimits(DEFAULTS, ENV, input, env);
}
