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

/** Runs `step` until it succeeds, retrying transient failures with backoff for up to a minute. */
export async function whenJetStreamAnswers<T>(step: () => Promise<T>, timeoutMs = JETSTREAM_READY_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await step();
    } catch (err) {
      if (!isTransientJetStreamError(err) || Date.now() + delay > deadline) throw err;
      await sleep(delay);
    }
  }
}
