// Waiting out a NATS cluster that is up but not yet answering. JetStream answers requests only once its Raft groups
// have leaders: right after the servers start, after one is lost, or while a replicated bucket is being created on a
// loaded machine, requests time out or find no responder for seconds. A node starting then must wait, not exit.
import { setTimeout as sleep } from "node:timers/promises";
import { RequestError } from "@nats-io/transport-node";
import { JetStreamApiError } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { clusterError } from "./cluster-errors.js";

/** How long a node keeps retrying a start-up step while JetStream is not answering. */
export const CLUSTER_READY_TIMEOUT_MS = 60_000;

/** A failure that a later attempt may not see: a timeout, no responder yet, JetStream answering 503. */
export function isTransientClusterError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "TimeoutError" || err.name === "NoRespondersError") return true;
  if (err instanceof RequestError) return err.isNoResponders() || isTransientClusterError(err.cause);
  return err instanceof JetStreamApiError && err.status === 503;
}

export interface ClusterRetryOptions {
  logger?: Logger;
  /** @default CLUSTER_READY_TIMEOUT_MS */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Run `step` until it succeeds, retrying transient failures with backoff until the deadline; then fail as `what`. */
export async function whenClusterAnswers<T>(what: string, step: () => Promise<T>, opts: ClusterRetryOptions = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? CLUSTER_READY_TIMEOUT_MS);
  for (let attempt = 1, delay = 250; ; attempt++, delay = Math.min(delay * 2, 2_000)) {
    try {
      return await step();
    } catch (err) {
      if (!isTransientClusterError(err) || Date.now() + delay > deadline || opts.signal?.aborted) throw clusterError(err, what);
      opts.logger?.warn({ err, attempt }, `${what}: the cluster is not answering yet; retrying`);
      await sleep(delay, undefined, { signal: opts.signal });
    }
  }
}
