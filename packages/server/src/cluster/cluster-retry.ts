// Waiting out a NATS cluster that is up but not yet answering. JetStream answers requests only once its Raft groups
// have leaders: right after the servers start, after one is lost, or while a replicated bucket is being created on a
// loaded machine, requests time out or find no responder for seconds. A node starting then must wait, not exit.
import type { Logger } from "pino";
import { whenJetStreamAnswers } from "@burrow/bus";
import { clusterError } from "./cluster-errors.js";

/** How long a node keeps retrying a start-up step while JetStream is not answering. */
export const CLUSTER_READY_TIMEOUT_MS = 60_000;

export interface ClusterRetryOptions {
  logger?: Logger;
  /** @default CLUSTER_READY_TIMEOUT_MS */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Run `step` until it succeeds, retrying transient failures (the bus's `whenJetStreamAnswers`) until the deadline;
 * then fail as `what`. An abort while waiting is passed on as it is.
 */
export async function whenClusterAnswers<T>(what: string, step: () => Promise<T>, opts: ClusterRetryOptions = {}): Promise<T> {
  try {
    return await whenJetStreamAnswers(step, {
      timeoutMs: opts.timeoutMs ?? CLUSTER_READY_TIMEOUT_MS,
      ...(opts.signal ? { signal: opts.signal } : {}),
      onRetry: (err, attempt) => opts.logger?.warn({ err, attempt }, `${what}: the cluster is not answering yet; retrying`),
    });
  } catch (err) {
    if (opts.signal?.aborted && err instanceof Error && err.name === "AbortError") throw err;
    throw clusterError(err, what);
  }
}
