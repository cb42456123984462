import { BurrowError, Code } from "@burrow/protocol";
import { DLQ_STREAM } from "../dead-letter.js";
import { Notifier } from "../signals.js";
import type { Bus, Consumer, DurableMsg, MsgHeaders, PubAck, Subscription } from "../types.js";

/** Priorities 0 (lowest) … 9 (highest); each is a subject lane, since NATS 2.9 has no message priority. */
export const MAX_PRIORITY = 9;

export interface WorkQueueOptions {
  /** [A-Za-z0-9_-]{1,57} */
  name: string;
  /** How long a consumer may hold a message before it is given to another. @default 30000 */
  ackWaitMs?: number;
  /** Deliveries before the message goes to the dead-letter stream. @default 5 */
  maxAttempts?: number;
  /** Delay before attempt n+1 after a nack on attempt n (last value repeats). @default [1000, 5000, 30000] */
  backoffMs?: number[];
  /** Window for msgId de-duplication. @default 120000 */
  duplicateWindowMs?: number;
  /** Longest a waiting consumer goes without re-checking (redeliveries are not announced). @default 250 */
  pollMs?: number;
}

export interface EnqueueOptions {
  /** 0–9, higher first; FIFO within one priority. @default 0 */
  priority?: number;
  /** De-duplication id: enqueuing it again inside the window is acknowledged but stored once. */
  msgId?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface QueueMessage {
  readonly data: Uint8Array;
  readonly headers: MsgHeaders;
  readonly priority: number;
  readonly msgId: string | undefined;
  /** 1 on the first attempt. */
  readonly attempt: number;
  readonly seq: number;
  ack(): Promise<void>;
  /** Retry later: after `delayMs`, or the queue's backoff for this attempt. `error` is kept if it was the last one. */
  nack(opts?: { delayMs?: number; error?: string }): Promise<void>;
  /** Give up now: straight to the dead-letter stream, with `error` when given. */
  term(opts?: { error?: string }): Promise<void>;
  working(): Promise<void>;
}

export function queueStream(name: string): string {
  return `QUEUE_${name}`;
}
export function laneSubject(name: string, priority: number): string {
  return `queue.${name}.p${priority}`;
}

/** A named, durable work queue with priorities, ack/nack, backoff, max attempts then dead-letter, and msgId dedup. */
export class WorkQueue {
  private constructor(private readonly bus: Bus, readonly opts: Required<Omit<WorkQueueOptions, "duplicateWindowMs">> & { duplicateWindowMs?: number }) {}

  static async open(bus: Bus, o: WorkQueueOptions): Promise<WorkQueue> {
    if (!/^[A-Za-z0-9_-]{1,57}$/.test(o.name)) throw new BurrowError(Code.InvalidArgument, `invalid queue name "${o.name}"`);
    const q = new WorkQueue(bus, {
      name: o.name,
      ackWaitMs: o.ackWaitMs ?? 30_000,
      maxAttempts: o.maxAttempts ?? 5,
      backoffMs: o.backoffMs ?? [1000, 5000, 30_000],
      pollMs: o.pollMs ?? 250,
      ...(o.duplicateWindowMs ? { duplicateWindowMs: o.duplicateWindowMs } : {}),
    });
    await bus.ensureStream({
      name: queueStream(o.name),
      subjects: [`queue.${o.name}.*`],
      retention: "workqueue",
      ...(o.duplicateWindowMs ? { duplicateWindowMs: o.duplicateWindowMs } : {}),
    });
    return q;
  }

  get name(): string {
    return this.opts.name;
  }

  enqueue(data: Uint8Array, o: EnqueueOptions = {}): Promise<PubAck> {
    const p = o.priority ?? 0;
    if (!Number.isInteger(p) || p < 0 || p > MAX_PRIORITY) return Promise.reject(new BurrowError(Code.InvalidArgument, "priority is 0–9"));
    return this.bus.publishDurable(laneSubject(this.opts.name, p), data, { msgId: o.msgId, headers: o.headers, signal: o.signal });
  }

  /** A consumer of the queue. Any number may run, in any process; each message goes to one of them. */
  async consumer(): Promise<QueueConsumer> {
    const lanes: Consumer[] = [];
    for (let p = MAX_PRIORITY; p >= 0; p--) {
      lanes.push(
        await this.bus.consumer(queueStream(this.opts.name), {
          durable: `lane${p}`,
          filterSubject: laneSubject(this.opts.name, p),
          ackWaitMs: this.opts.ackWaitMs,
          maxDeliver: this.opts.maxAttempts,
        }),
      );
    }
    return new QueueConsumer(this, lanes, this.bus.subscribe(`queue.${this.opts.name}.*`));
  }

  /** Reads this queue's dead letters (durable `durable` on the dead-letter stream). */
  deadLetters(durable: string): Promise<Consumer> {
    return this.bus.consumer(DLQ_STREAM, { durable, filterSubject: `dlq.${queueStream(this.opts.name)}.>` });
  }

  backoffFor(attempt: number): number {
    const b = this.opts.backoffMs;
    return b.length === 0 ? 0 : b[Math.min(attempt - 1, b.length - 1)]!;
  }
}

class LaneMessage implements QueueMessage {
  constructor(private readonly q: WorkQueue, private readonly m: DurableMsg, readonly priority: number) {}
  get data() { return this.m.data; }
  get headers() { return this.m.headers; }
  get msgId() { return this.m.msgId; }
  get attempt() { return this.m.deliveryCount; }
  get seq() { return this.m.seq; }
  ack() { return this.m.ack(); }
  nack(o?: { delayMs?: number; error?: string }) { return this.m.nak(o?.delayMs ?? this.q.backoffFor(this.m.deliveryCount), o?.error === undefined ? undefined : { error: o.error }); }
  term(o?: { error?: string }) { return this.m.term(o?.error === undefined ? undefined : { error: o.error }); }
  working() { return this.m.working(); }
}

/**
 * Takes the highest-priority ready message by trying lanes from 9 down to 0. A publish to any lane wakes waiting
 * consumers at once; redeliveries (nack delays, ack timeouts) are found by re-checking every `pollMs`.
 */
export class QueueConsumer implements AsyncIterable<QueueMessage> {
  private readonly wake = new Notifier();
  private readonly closing = new AbortController();
  private readonly watcher: Promise<void>;

  constructor(private readonly q: WorkQueue, private readonly lanes: Consumer[], private readonly sub: Subscription) {
    this.watcher = (async () => {
      for await (const _ of sub) this.wake.fire();
    })();
  }

  async next(o: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<QueueMessage | null> {
    const deadline = Date.now() + (o.timeoutMs ?? 5000);
    const signal = o.signal ? AbortSignal.any([o.signal, this.closing.signal]) : this.closing.signal;
    for (;;) {
      if (this.closing.signal.aborted) return null;
      for (let i = 0; i < this.lanes.length; i++) {
        let m: DurableMsg | null;
        try {
          m = await this.lanes[i]!.next({ timeoutMs: 0, signal });
        } catch (e) {
          if (this.closing.signal.aborted) return null; // closed mid-pull: end quietly, as iteration expects
          throw e;
        }
        if (m) return new LaneMessage(this.q, m, MAX_PRIORITY - i);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) return null;
      try {
        await this.wake.wait(Math.min(remaining, this.q.opts.pollMs), signal);
      } catch (e) {
        if (this.closing.signal.aborted) return null;
        throw e;
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<QueueMessage> {
    while (!this.closing.signal.aborted) {
      const m = await this.next({ timeoutMs: 5000 });
      if (m) yield m;
    }
  }

  /** Stops consuming; messages taken and not acknowledged go to another consumer after the ack wait. */
  async close(): Promise<void> {
    this.closing.abort();
    await this.sub.close();
    await this.watcher;
    for (const l of this.lanes) await l.close();
  }
}
