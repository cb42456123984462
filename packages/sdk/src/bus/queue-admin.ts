// Operating queues: depth and dead letters (GET /burrow/v1/queues…). Reading them neither creates a queue nor
// changes its consumers, so these are safe to call from monitoring.
import type { DeadLetterPageWire, DeadLetterWire, DroppedAllWire, QueueDepthWire, RequeuedAllWire } from "@burrow/protocol";
import { fromBody, type CallOptions, type Http } from "./http.js";

/** A queue's depth: `ready`, `inFlight` (held by consumers or waiting for a retry), `deadLetters`. */
export type QueueDepth = QueueDepthWire;

/** A dead letter as the SDK gives it: the payload as bytes (and text when valid UTF-8), the time as a Date. */
export interface DeadLetter extends Omit<DeadLetterWire, "data" | "dataBase64" | "time"> {
  data: Uint8Array;
  /** The payload as text, when it is valid UTF-8. */
  text: string | undefined;
  /** When it was moved. */
  time: Date;
}

export interface DeadLetterPage extends Omit<DeadLetterPageWire, "items"> {
  items: DeadLetter[];
}

const toDeadLetter = (d: DeadLetterWire): DeadLetter => ({
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
      const page = (await httpOf().json<DeadLetterPageWire>(path, "GET", undefined, opts)).body!;
      return { items: page.items.map(toDeadLetter), total: page.total, next: page.next };
    },

    deadLetter: async (name: string, seq: number, opts: CallOptions = {}): Promise<DeadLetter> =>
      toDeadLetter((await httpOf().json<DeadLetterWire>(`${q(name)}/dead-letters/${seq}`, "GET", undefined, opts)).body!),

    /** Puts a dead letter back on its queue (its priority lane) as a new message; returns its seq in the queue. */
    requeue: async (name: string, seq: number, opts: CallOptions = {}): Promise<{ seq: number }> =>
      (await httpOf().json<{ seq: number }>(`${q(name)}/dead-letters/${seq}/requeue`, "POST", undefined, opts)).body!,

    /** Requeues every dead letter of the queue; returns how many. */
    requeueAll: async (name: string, opts: CallOptions = {}): Promise<number> =>
      (await httpOf().json<RequeuedAllWire>(`${q(name)}/dead-letters/requeue`, "POST", undefined, opts)).body!.requeued,

    drop: async (name: string, seq: number, opts: CallOptions = {}): Promise<void> => {
      await httpOf().json(`${q(name)}/dead-letters/${seq}`, "DELETE", undefined, opts);
    },

    /** Drops every dead letter of the queue; returns how many. */
    dropAll: async (name: string, opts: CallOptions = {}): Promise<number> =>
      (await httpOf().json<DroppedAllWire>(`${q(name)}/dead-letters`, "DELETE", undefined, opts)).body!.dropped,
  };
}
