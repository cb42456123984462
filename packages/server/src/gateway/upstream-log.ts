// Every failed exchange with a sandbox is logged with its cause, but a burst (a thousand sandboxes failing at once,
// one sandbox refusing a flood of requests) must not flood the log: past a budget per interval, failures are only
// counted by cause, and the counts are logged in one line when the interval ends.
import type { Logger } from "pino";
import type { UpstreamFailure } from "./upstream-failure.js";

/** Lines logged per interval before failures are only counted. */
const BURST = 20;
const INTERVAL_MS = 10_000;

export interface UpstreamFailureContext {
  sandboxId: string;
  port: number;
  method: string | undefined;
  url: string | undefined;
  /** The gateway sent the request again on a fresh connection. */
  retried: boolean;
  /** The sandbox is still running (a failure of a sandbox that is being killed or paused is expected). */
  live: boolean;
}

export class UpstreamFailureLog {
  readonly #logger: Logger;
  readonly #burst: number;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #windowStart = -Infinity;
  #logged = 0;
  /** Failures not logged in the current interval, by `kind/code`. */
  #suppressed = new Map<string, number>();

  constructor(logger: Logger, opts: { burst?: number; intervalMs?: number; now?: () => number } = {}) {
    this.#logger = logger;
    this.#burst = opts.burst ?? BURST;
    this.#intervalMs = opts.intervalMs ?? INTERVAL_MS;
    this.#now = opts.now ?? Date.now;
  }

  record(failure: UpstreamFailure, ctx: UpstreamFailureContext): void {
    // Connections of a sandbox being killed or paused are cut on purpose: not worth a warning.
    if (!ctx.live) {
      this.#logger.debug({ ...ctx, ...failure }, "connection to a sandbox that is going away failed");
      return;
    }
    const now = this.#now();
    if (now - this.#windowStart >= this.#intervalMs) {
      this.#flush();
      this.#windowStart = now;
      this.#logged = 0;
    }
    if (this.#logged >= this.#burst) {
      const key = `${failure.kind}/${failure.code}`;
      if (this.#suppressed.size === 0) setTimeout(() => this.#flush(), this.#intervalMs - (now - this.#windowStart)).unref();
      this.#suppressed.set(key, (this.#suppressed.get(key) ?? 0) + 1);
      return;
    }
    this.#logged++;
    const { sandboxId, port, method, url, retried } = ctx;
    const fields = {
      sandboxId,
      port,
      method,
      url,
      cause: failure.kind,
      code: failure.code,
      error: failure.message,
      reusedConnection: failure.reused,
      connected: failure.connected,
      answerStarted: failure.answered,
      retried,
    };
    this.#logger.warn(fields, retried ? "sandbox connection failed, retrying on a fresh connection" : "sandbox connection failed");
  }

  #flush(): void {
    if (this.#suppressed.size === 0) return;
    const counts = Object.fromEntries(this.#suppressed);
    this.#suppressed = new Map();
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    this.#logger.warn({ failures: counts, total }, `${total} more sandbox connection failures (by cause/code) in ${this.#intervalMs / 1000} s, not logged one by one`);
  }
}
