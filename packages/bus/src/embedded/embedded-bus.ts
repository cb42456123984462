import { randomBytes } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol";
import { AsyncQueue } from "../async-queue.js";
import { abortError } from "../errors.js";
import { DLQ_STREAM, DLQ_SUBJECTS } from "../dead-letter.js";
import { queueSubscription } from "../subscription.js";
import type { BusMetrics } from "../metrics.js";
import { assertName, DEFAULT_MAX_PENDING, DEFAULT_REQUEST_TIMEOUT_MS, validateConsumerConfig } from "../names.js";
import { Notifier } from "../signals.js";
import { assertLiteralSubject, assertSubject } from "../subject.js";
import { injectTrace, normalizeHeaders, outgoingHeaders } from "../trace.js";
import type {
  Bus, BusMsg, CallOptions, Consumer, ConsumerConfig, ConsumerInfo, DurablePublishOptions, KV, KvOptions, PubAck, PublishOptions,
  StoredMessage, StreamConfig, StreamInfo, SubscribeOptions, Subscription,
} from "../types.js";
import { CoreRouter } from "./core-router.js";
import { EmbeddedConsumer } from "./embedded-consumer.js";
import { EmbeddedKv } from "./embedded-kv.js";
import { EmbeddedMsg } from "./embedded-msg.js";
import { SqliteStore, type Claimed, type StoredMsg } from "./sqlite-store.js";

export interface EmbeddedBusOptions {
  /** SQLite file; ":memory:" for a bus that forgets everything on close. */
  path: string;
  metrics?: BusMetrics;
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/** The in-process bus: core routing in memory, streams, consumers and KV in one SQLite file. */
export class EmbeddedBus implements Bus {
  readonly kind = "embedded" as const;
  readonly store: SqliteStore;
  readonly metrics: BusMetrics | undefined;
  private readonly router = new CoreRouter();
  private readonly notifiers = new Map<string, Notifier>();
  private readonly consumers = new Set<EmbeddedConsumer>();

  /** Called by a consumer's close(). */
  forget(c: EmbeddedConsumer): void {
    this.consumers.delete(c);
  }
  private closed = false;

  constructor(opts: EmbeddedBusOptions) {
    this.store = new SqliteStore(opts.path);
    this.metrics = opts.metrics;
    this.store.ensureStream({ name: DLQ_STREAM, subjects: DLQ_SUBJECTS, retention: "limits" });
  }

  private assertOpen(): void {
    if (this.closed) throw new BurrowError(Code.FailedPrecondition, "bus is closed");
  }

  notifier(stream: string): Notifier {
    let n = this.notifiers.get(stream);
    if (!n) this.notifiers.set(stream, (n = new Notifier()));
    return n;
  }

  private headersFor(h: Record<string, string> | undefined, ctx: PublishOptions["context"]): Readonly<Record<string, string>> {
    const out = injectTrace(normalizeHeaders(h), ctx);
    for (const k in out) if (k) return out;
    return EMPTY;
  }

  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<void> {
    try {
      this.publishSync(subject, data, opts);
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private publishSync(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    this.assertOpen();
    assertLiteralSubject(subject);
    const headers = outgoingHeaders(opts?.headers, opts?.context) ?? EMPTY;
    if (this.store.hasStreams()) {
      const stream = this.store.streamFor(subject.split("."));
      if (stream !== undefined) {
        const now = Date.now();
        this.store.append(stream, subject, headers, data, headers["nats-msg-id"], now);
        this.store.prune(now);
        this.notifier(stream).fire();
      }
    }
    this.metrics?.published.inc({ backend: "embedded", mode: "core" });
    const n = this.router.route(subject, new EmbeddedMsg(this, subject, data, headers, opts?.reply));
    if (n > 0) this.metrics?.delivered.inc({ backend: "embedded", mode: "core" }, n);
  }

  async publishDurable(subject: string, data: Uint8Array, opts?: DurablePublishOptions): Promise<PubAck> {
    this.assertOpen();
    if (opts?.signal?.aborted) return Promise.reject(abortError(opts.signal));
    const tokens = assertSubject(subject, false);
    const stream = this.store.streamFor(tokens);
    if (stream === undefined) return Promise.reject(new BurrowError(Code.NotFound, `no stream stores subject "${subject}"`));
    const headers = this.headersFor(opts?.headers, opts?.context);
    const now = Date.now();
    const { seq, duplicate } = this.store.append(stream, subject, headers, data, opts?.msgId, now);
    this.store.prune(now);
    if (!duplicate) {
      this.metrics?.published.inc({ backend: "embedded", mode: "durable" });
      this.notifier(stream).fire();
      // A stored message is also a plain publish, as on NATS, so live subscribers see it.
      const h = opts?.msgId === undefined ? headers : { ...headers, "nats-msg-id": opts.msgId };
      this.router.route(subject, new EmbeddedMsg(this, subject, data, h, undefined));
    }
    return Promise.resolve({ stream, seq, duplicate });
  }

  subscribe(pattern: string, opts: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    let id = 0;
    const sink = new AsyncQueue<BusMsg>(opts.maxPending ?? DEFAULT_MAX_PENDING, () => this.router.remove(id));
    id = this.router.add(pattern, opts.queue, sink);
    return queueSubscription(pattern, sink, () => this.router.remove(id), opts.signal);
  }

  async request(subject: string, data: Uint8Array, opts: CallOptions & { headers?: Record<string, string>; context?: PublishOptions["context"] } = {}): Promise<BusMsg> {
    this.assertOpen();
    assertSubject(subject, false);
    if (!this.router.hasInterest(subject)) throw new BurrowError(Code.Unavailable, `no responders for "${subject}"`);
    const inbox = `_INBOX.${randomBytes(12).toString("hex")}`;
    const sub = this.subscribe(inbox, { maxPending: 1 });
    const timeoutMs = opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const it = sub[Symbol.asyncIterator]();
    try {
      const reply = it.next();
      await this.publish(subject, data, { headers: opts.headers, reply: inbox, context: opts.context });
      const r = await new Promise<IteratorResult<BusMsg>>((resolve, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        reply.then(resolve, reject);
      }).catch((e: unknown) => {
        if (timeout.aborted && !opts.signal?.aborted) throw new BurrowError(Code.DeadlineExceeded, `request to "${subject}" timed out after ${timeoutMs} ms`);
        throw BurrowError.from(e, Code.Canceled);
      });
      if (r.done) throw new BurrowError(Code.Canceled, "bus closed");
      return r.value;
    } finally {
      await sub.close();
    }
  }

  async ensureStream(cfg: StreamConfig, opts?: CallOptions): Promise<void> {
    this.assertOpen();
    if (opts?.signal?.aborted) return Promise.reject(abortError(opts.signal));
    assertName("stream", cfg.name);
    if (cfg.subjects.length === 0) return Promise.reject(new BurrowError(Code.InvalidArgument, "a stream needs at least one subject"));
    this.store.ensureStream(cfg);
    return Promise.resolve();
  }

  async deleteStream(name: string): Promise<void> {
    this.assertOpen();
    this.store.deleteStream(name);
    this.notifier(name).fire();
    return Promise.resolve();
  }

  async consumer(stream: string, cfg: ConsumerConfig, opts?: CallOptions): Promise<Consumer> {
    this.assertOpen();
    if (opts?.signal?.aborted) return Promise.reject(abortError(opts.signal));
    validateConsumerConfig(cfg);
    this.store.ensureConsumer(stream, cfg);
    const c = new EmbeddedConsumer(this, stream, cfg);
    this.consumers.add(c);
    return Promise.resolve(c);
  }

  /** Claim step shared by consumers: moves dead letters (and tells live subscribers about them), counts metrics. */
  claim(stream: string, cfg: ConsumerConfig, now: number): Claimed | undefined {
    const { msg, dead } = this.store.claim(stream, cfg, now);
    for (const d of dead) this.announceDeadLetter(d, "max_deliver");
    if (msg) {
      this.metrics?.delivered.inc({ backend: "embedded", mode: "durable" });
      if (msg.deliveries > 1) this.metrics?.redelivered.inc({ backend: "embedded" });
    }
    return msg;
  }

  term(stream: string, durable: string, seq: number, error?: string): void {
    const d = this.store.term(stream, durable, seq, Date.now(), "terminated", error);
    if (d) this.announceDeadLetter(d, "terminated");
  }

  deadLetterNow(stream: string, durable: string, seq: number, error?: string): void {
    const d = this.store.term(stream, durable, seq, Date.now(), "max_deliver", error);
    if (d) this.announceDeadLetter(d, "max_deliver");
  }

  private announceDeadLetter(d: StoredMsg, reason: string): void {
    this.metrics?.deadLettered.inc({ backend: "embedded", reason });
    this.notifier(DLQ_STREAM).fire();
    this.router.route(d.subject, new EmbeddedMsg(this, d.subject, d.data, d.headers, undefined));
  }

  async streamNames(): Promise<string[]> {
    this.assertOpen();
    return Promise.resolve(this.store.streamNames());
  }

  async streamInfo(name: string, opts?: CallOptions & { subjectsFilter?: string }): Promise<StreamInfo> {
    this.assertOpen();
    return Promise.resolve({ name, ...this.store.streamInfo(name, opts?.subjectsFilter) });
  }

  async consumerInfos(stream: string): Promise<ConsumerInfo[]> {
    this.assertOpen();
    return Promise.resolve(this.store.consumerInfos(stream).map((c) => ({ stream, ...c })));
  }

  async readMessage(stream: string, query: { fromSeq: number; subject?: string }): Promise<StoredMessage | null> {
    this.assertOpen();
    const m = this.store.readMessage(stream, query.fromSeq, query.subject);
    if (!m) return Promise.resolve(null);
    return Promise.resolve({ stream, seq: m.seq, subject: m.subject, headers: m.headers, data: m.data, time: m.ts });
  }

  async deleteMessage(stream: string, seq: number): Promise<boolean> {
    this.assertOpen();
    return Promise.resolve(this.store.deleteMessage(stream, seq));
  }

  async purgeStream(stream: string, opts?: CallOptions & { subject?: string }): Promise<number> {
    this.assertOpen();
    return Promise.resolve(this.store.purge(stream, opts?.subject));
  }

  async kv(bucket: string, opts?: KvOptions & CallOptions): Promise<KV> {
    this.assertOpen();
    assertName("bucket", bucket);
    return Promise.resolve(new EmbeddedKv(this.store.db, bucket, opts?.ttlMs));
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const c of [...this.consumers]) await c.close();
    this.router.closeAll();
    for (const n of this.notifiers.values()) n.fire();
    this.store.close();
  }
}
