// Waiting out JetStream while a replicated stream is being made. A stream or bucket with replicas is created by a Raft
// election among the servers: right after they start, while several nodes start at once, or on a loaded machine, its
// request times out or JetStream answers 503 for seconds although nothing is wrong. Creating is idempotent (an
// existing stream with the same settings is no error), so the request is simply made again.
import { setTimeout as sleep } from "node:timers/promises";
import { RequestError } from "@nats-io/transport-node";
import { JetStreamApiError } from "@nats-io/jetstream";

/** How long a replicated stream's creation is retried. */
export const JETSTREAM_READY_TIMEOUT_MS = 60_000;

/** A failure a later attempt may not see: a timeout, no responder yet, JetStream answering 503. */
export function isTransientJetStreamError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "TimeoutError" || err.name === "NoRespondersError") return true;
  if (err instanceof RequestError) return err.isNoResponders() || isTransientJetStreamError(err.cause);
  return err instanceof JetStreamApiError && err.status === 503;
}

export interface JetStreamRetryOptions {
  /** @default JETSTREAM_READY_TIMEOUT_MS */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Told of each transient failure before its retry (a log line). */
  onRetry?: (err: unknown, attempt: number) => void;
}

/** Runs `step` until it succeeds, retrying transient failures with backoff until the deadline (a minute by default). */
export async function whenJetStreamAnswers<T>(step: () => Promise<T>, opts: JetStreamRetryOptions = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? JETSTREAM_READY_TIMEOUT_MS);
  for (let attempt = 1, delay = 250; ; attempt++, delay = Math.min(delay * 2, 2_000)) {
    try {
      return await step();
    } catch (err) {
      if (!isTransientJetStreamError(err) || Date.now() + delay > deadline || opts.signal?.aborted) throw err;
      opts.onRetry?.(err, attempt);
      await sleep(delay, undefined, opts.signal ? { signal: opts.signal } : undefined);
    }
  }
}
