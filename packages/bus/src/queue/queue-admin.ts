import { BurrowError, Code } from "@burrow/protocol";
import { DLQ_HEADER, DLQ_STREAM, type DeadLetterReason } from "../dead-letter.js";
import type { Bus, MsgHeaders, StoredMessage } from "../types.js";
import { laneSubject, queueStream } from "./work-queue.js";

const PREFIX = "QUEUE_";
const LANE = /^lane\d$/;
const LANE_SUBJECT = /^queue\.[A-Za-z0-9_-]+\.p(\d)$/;

export interface QueueDepth {
  name: string;
  /** Stored and not held by any consumer: waiting for its first delivery. */
  ready: number;
  /** Delivered and not yet acknowledged: held by a consumer, or waiting for a retry after a nack. */
  inFlight: number;
  deadLetters: number;
}

export interface DeadLetter {
  /** Its sequence in the dead-letter stream: the id to requeue or drop it by. */
  seq: number;
  data: Uint8Array;
  /** The headers it was enqueued with. */
  headers: MsgHeaders;
  /** Deliveries it had before it was moved. */
  attempts: number;
  /** Why it was moved: out of attempts, or given up on by its consumer (term). */
  reason: DeadLetterReason;
  /** The error its consumer gave with the last nack or the term, if any. */
  lastError: string | undefined;
  /** When it was moved, ms since the epoch. */
  time: number;
  /** Its priority lane, when its subject names one. */
  priority: number | undefined;
  /** Its sequence in the queue's stream, before it was moved. */
  queueSeq: number;
}

/**
 * Operating work queues from outside: depth and dead letters. Everything here reads through the bus's stream
 * operations, never through a consumer: opening a queue's consumers (WorkQueue.consumer, deadLetters) creates
 * durables or rewrites their settings on both backends, which an operator looking must not do.
 */
export class QueueAdmin {
  constructor(private readonly bus: Bus) {}

  /** Names of the queues on the bus (every stream a WorkQueue opened). */
  async names(opts?: { signal?: AbortSignal }): Promise<string[]> {
    const streams = await this.bus.streamNames(opts);
    return streams.filter((s) => s.startsWith(PREFIX)).map((s) => s.slice(PREFIX.length));
  }

  /** Every queue's depth, with one read of the dead-letter stream's per-subject counts for all of them. */
  async list(opts?: { signal?: AbortSignal }): Promise<QueueDepth[]> {
    const names = await this.names(opts);
    if (names.length === 0) return [];
    const dead = await this.deadLetterCounts("dlq.>", opts?.signal);
    const out: QueueDepth[] = [];
    for (const name of names) {
      try {
        out.push({ name, ...(await this.flowing(name, opts?.signal)), deadLetters: dead.get(queueStream(name)) ?? 0 });
      } catch (e) {
        if (BurrowError.from(e, Code.Unknown).code !== Code.NotFound) throw e; // deleted since listed: leave it out
      }
    }
    return out;
  }

  /** NotFound when there is no such queue. */
  async depth(name: string, opts?: { signal?: AbortSignal }): Promise<QueueDepth> {
    const flowing = await this.flowing(name, opts?.signal);
    const dead = await this.deadLetterCounts(this.dlqFilter(name), opts?.signal);
    return { name, ...flowing, deadLetters: dead.get(queueStream(name)) ?? 0 };
  }

  /** Dead letters oldest first, after the dead-letter sequence `after`; `next` is where the following page starts. */
  async deadLetters(name: string, o: { after?: number; limit?: number; signal?: AbortSignal } = {}): Promise<{ items: DeadLetter[]; total: number; next: number | undefined }> {
    await this.requireQueue(name, o.signal);
    const limit = Math.max(1, Math.min(o.limit ?? 50, 500));
    const filter = this.dlqFilter(name);
    const total = sum(await this.deadLetterCounts(filter, o.signal));
    const items: DeadLetter[] = [];
    let from = (o.after ?? 0) + 1;
    for (;;) {
      const m = await this.bus.readMessage(DLQ_STREAM, { fromSeq: from, subject: filter }, { signal: o.signal });
      if (!m) return { items, total, next: undefined };
      if (items.length === limit) return { items, total, next: items[items.length - 1]!.seq };
      items.push(toDeadLetter(m));
      from = m.seq + 1;
    }
  }

  /** NotFound when the queue has no dead letter with this sequence. */
  async deadLetter(name: string, seq: number, opts?: { signal?: AbortSignal }): Promise<DeadLetter> {
    return toDeadLetter(await this.stored(name, seq, opts?.signal));
  }

  /**
   * Puts a dead letter back on its queue at its priority, as a new message (attempts start again), then removes it
   * from the dead letters. Published before it is removed, so a failure in between leaves a copy, never nothing;
   * the msg-id makes a second requeue of the same one inside the queue's duplicate window store it once.
   */
  async requeue(name: string, seq: number, opts?: { signal?: AbortSignal }): Promise<{ seq: number }> {
    const m = await this.stored(name, seq, opts?.signal);
    const d = toDeadLetter(m);
    const subject = laneSubject(name, d.priority ?? 0);
    const headers: Record<string, string> = { ...d.headers };
    const ack = await this.bus.publishDurable(subject, m.data, { headers, msgId: `requeue:${DLQ_STREAM}:${m.seq}`, signal: opts?.signal });
    await this.bus.deleteMessage(DLQ_STREAM, m.seq, opts);
    return { seq: ack.seq };
  }

  /** Requeues every dead letter the queue has now (those moved while this runs are left for the next call). */
  async requeueAll(name: string, opts?: { signal?: AbortSignal }): Promise<number> {
    await this.requireQueue(name, opts?.signal);
    const filter = this.dlqFilter(name);
    const last = (await this.bus.streamInfo(DLQ_STREAM, opts)).lastSeq;
    let n = 0;
    let from = 1;
    for (;;) {
      const m = await this.bus.readMessage(DLQ_STREAM, { fromSeq: from, subject: filter }, opts);
      if (!m || m.seq > last) return n;
      await this.requeue(name, m.seq, opts);
      n++;
      from = m.seq + 1;
    }
  }

  async drop(name: string, seq: number, opts?: { signal?: AbortSignal }): Promise<void> {
    const m = await this.stored(name, seq, opts?.signal);
    if (!(await this.bus.deleteMessage(DLQ_STREAM, m.seq, opts))) throw notFound(name, seq);
  }

  async dropAll(name: string, opts?: { signal?: AbortSignal }): Promise<number> {
    await this.requireQueue(name, opts?.signal);
    return this.bus.purgeStream(DLQ_STREAM, { ...opts, subject: this.dlqFilter(name) });
  }

  private dlqFilter(name: string): string {
    return `dlq.${queueStream(name)}.>`;
  }

  private async requireQueue(name: string, signal: AbortSignal | undefined): Promise<void> {
    await this.bus.streamInfo(queueStream(name), { signal }).catch((e: unknown) => {
      throw BurrowError.from(e, Code.Unknown).code === Code.NotFound ? new BurrowError(Code.NotFound, `queue "${name}" not found`) : e;
    });
  }

  /**
   * A work-queue stream holds exactly the messages not yet acknowledged (nor dead-lettered), so what its lane
   * durables hold unacknowledged is in flight and the rest is ready; a queue nobody consumed yet has no durables.
   */
  private async flowing(name: string, signal: AbortSignal | undefined): Promise<{ ready: number; inFlight: number }> {
    const stream = queueStream(name);
    let messages: number;
    try {
      messages = (await this.bus.streamInfo(stream, { signal })).messages;
    } catch (e) {
      if (BurrowError.from(e, Code.Unknown).code === Code.NotFound) throw new BurrowError(Code.NotFound, `queue "${name}" not found`);
      throw e;
    }
    const consumers = await this.bus.consumerInfos(stream, { signal });
    const inFlight = Math.min(messages, consumers.filter((c) => LANE.test(c.durable)).reduce((n, c) => n + c.numAckPending, 0));
    return { ready: messages - inFlight, inFlight };
  }

  /** Dead letters per queue stream, from the dead-letter stream's per-subject counts (`dlq.<stream>.<durable>`). */
  private async deadLetterCounts(filter: string, signal: AbortSignal | undefined): Promise<Map<string, number>> {
    const info = await this.bus.streamInfo(DLQ_STREAM, { subjectsFilter: filter, signal });
    const out = new Map<string, number>();
    for (const [subject, n] of Object.entries(info.subjects ?? {})) {
      const stream = subject.split(".")[1] ?? "";
      out.set(stream, (out.get(stream) ?? 0) + n);
    }
    return out;
  }

  private async stored(name: string, seq: number, signal: AbortSignal | undefined): Promise<StoredMessage> {
    await this.requireQueue(name, signal);
    const m = await this.bus.readMessage(DLQ_STREAM, { fromSeq: seq, subject: this.dlqFilter(name) }, { signal });
    // The first match at or after seq: another sequence means this one is not this queue's (or is gone).
    if (!m || m.seq !== seq) throw notFound(name, seq);
    return m;
  }
}

function notFound(name: string, seq: number): BurrowError {
  return new BurrowError(Code.NotFound, `queue "${name}" has no dead letter ${seq}`);
}

function sum(m: Map<string, number>): number {
  let n = 0;
  for (const v of m.values()) n += v;
  return n;
}

function toDeadLetter(m: StoredMessage): DeadLetter {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers)) if (!k.startsWith("burrow-dlq-")) headers[k] = v;
  const lane = LANE_SUBJECT.exec(m.headers[DLQ_HEADER.subject] ?? "");
  const reason = m.headers[DLQ_HEADER.reason] === "terminated" ? "terminated" : "max_deliver";
  return {
    seq: m.seq,
    data: m.data,
    headers,
    attempts: Number(m.headers[DLQ_HEADER.deliveries] ?? 0),
    reason,
    lastError: m.headers[DLQ_HEADER.error],
    time: m.time,
    priority: lane ? Number(lane[1]) : undefined,
    queueSeq: Number(m.headers[DLQ_HEADER.seq] ?? 0),
  };
}
