// Operating queues: depth and dead letters (GET /burrow/v1/queues…). Reading them neither creates a queue nor
// changes its consumers, so these are safe to call from monitoring.
import { fromBody, type CallOptions, type Http } from "./http.js";

export interface QueueDepth {
  name: string;
  /** Stored and not yet delivered. */
  ready: number;
  /** Delivered and not acknowledged: held by a consumer, or waiting for a retry after a nack. */
  inFlight: number;
  deadLetters: number;
}

export interface DeadLetter {
  /** Its id among the dead letters: what requeue and drop take. */
  seq: number;
  data: Uint8Array;
  /** The payload as text, when it is valid UTF-8. */
  text: string | undefined;
  headers: Record<string, string>;
  /** Deliveries it had before it was moved. */
  attempts: number;
  /** Why it was moved: out of attempts, or given up on by its consumer. */
  reason: string;
  /** The error its consumer gave with the last nack or term. */
  lastError: string | null;
  /** When it was moved. */
  time: Date;
  priority: number | null;
  /** Its sequence in the queue before it was moved. */
  queueSeq: number;
}

export interface DeadLetterPage {
  items: DeadLetter[];
  /** Dead letters of the queue in all. */
  total: number;
  /** Pass as `after` for the next page; null on the last. */
  next: number | null;
}

interface DeadLetterJson extends Omit<DeadLetter, "data" | "text" | "time"> {
  dataBase64: string;
  data?: string;
  time: string;
}

const toDeadLetter = (d: DeadLetterJson): DeadLetter => ({
  seq: d.seq, data: fromBody(d), text: d.data, headers: d.headers, attempts: d.attempts, reason: d.reason,
  lastError: d.lastError, time: new Date(d.time), priority: d.priority, queueSeq: d.queueSeq,
});

/** The admin half of `BusClient.queue`; `httpOf` because the client's fields are built before its constructor runs. */
export function queueAdmin(httpOf: () => Http) {
  const q = (name: string) => `/queues/${encodeURIComponent(name)}`;
  return {
    /** Every queue the key's team has, with its depth. */
    list: async (opts: CallOptions = {}): Promise<QueueDepth[]> => (await httpOf().json<QueueDepth[]>("/queues", "GET", undefined, opts)).body!,

    /** One queue's depth; 404 when there is no such queue. */
    depth: async (name: string, opts: CallOptions = {}): Promise<QueueDepth> => (await httpOf().json<QueueDepth>(q(name), "GET", undefined, opts)).body!,

    /** A page of dead letters, oldest first: `after` a seq (the previous page's `next`), at most `limit` (≤ 500). */
    deadLetters: async (name: string, opts: CallOptions & { after?: number; limit?: number } = {}): Promise<DeadLetterPage> => {
      const query = new URLSearchParams();
      if (opts.after !== undefined) query.set("after", String(opts.after));
      if (opts.limit !== undefined) query.set("limit", String(opts.limit));
      const path = `${q(name)}/dead-letters${query.size ? `?${query}` : ""}`;
      const page = (await httpOf().json<{ items: DeadLetterJson[]; total: number; next: number | null }>(path, "GET", undefined, opts)).body!;
      return { items: page.items.map(toDeadLetter), total: page.total, next: page.next };
    },

    deadLetter: async (name: string, seq: number, opts: CallOptions = {}): Promise<DeadLetter> =>
      toDeadLetter((await httpOf().json<DeadLetterJson>(`${q(name)}/dead-letters/${seq}`, "GET", undefined, opts)).body!),

    /** Puts a dead letter back on its queue (its priority lane) as a new message; returns its seq in the queue. */
    requeue: async (name: string, seq: number, opts: CallOptions = {}): Promise<{ seq: number }> =>
      (await httpOf().json<{ seq: number }>(`${q(name)}/dead-letters/${seq}/requeue`, "POST", undefined, opts)).body!,

    /** Requeues every dead letter of the queue; returns how many. */
    requeueAll: async (name: string, opts: CallOptions = {}): Promise<number> =>
      (await httpOf().json<{ requeued: number }>(`${q(name)}/dead-letters/requeue`, "POST", undefined, opts)).body!.requeued,

    drop: async (name: string, seq: number, opts: CallOptions = {}): Promise<void> => {
      await httpOf().json(`${q(name)}/dead-letters/${seq}`, "DELETE", undefined, opts);
    },

    /** Drops every dead letter of the queue; returns how many. */
    dropAll: async (name: string, opts: CallOptions = {}): Promise<number> =>
      (await httpOf().json<{ dropped: number }>(`${q(name)}/dead-letters`, "DELETE", undefined, opts)).body!.dropped,
  };
}
