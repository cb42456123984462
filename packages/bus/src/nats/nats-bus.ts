import { connect, nanos, type NatsConnection, type Subscription as NatsSub } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { whenJetStreamAnswers } from "./jetstream-ready.js";
import { BurrowError, Code } from "@burrow/protocol";
import { AsyncQueue } from "../async-queue.js";
import { abortError } from "../errors.js";
import { DLQ_STREAM, DLQ_SUBJECTS, deadLetterHeaders, deadLetterMsgId, deadLetterSubject, type DeadLetterReason } from "../dead-letter.js";
import { queueSubscription } from "../subscription.js";
import type { BusMetrics } from "../metrics.js";
import { assertName, DEFAULT_MAX_PENDING, DEFAULT_REQUEST_TIMEOUT_MS, validateConsumerConfig } from "../names.js";
import { assertLiteralSubject, assertSubject } from "../subject.js";
import { injectTrace, normalizeHeaders, outgoingHeaders } from "../trace.js";
import type {
  Bus, BusMsg, CallOptions, Consumer, ConsumerConfig, ConsumerInfo, DurablePublishOptions, KV, KvOptions, MsgHeaders, PubAck,
  PublishOptions, StoredMessage, StreamConfig, StreamInfo, SubscribeOptions, Subscription,
} from "../types.js";
import { JS_ERR, fromNatsError } from "./nats-errors.js";
import { toNatsHeaders } from "./nats-headers.js";
import { NatsConsumer } from "./nats-consumer.js";
import { NatsKvBucket } from "./nats-kv.js";
import { NatsMsg } from "./nats-msg.js";

export interface NatsBusOptions {
  servers: string | string[];
  /** Connection name shown by the server. */
  name?: string;
  token?: string;
  user?: string;
  pass?: string;
  metrics?: BusMetrics;
  /** Keep reconnecting (with nats.js defaults) when the server goes away. @default true */
  reconnect?: boolean;
  /**
   * Copies the NATS cluster keeps of each stream and bucket the bus creates (1-5), so that the loss of one server
   * loses nothing; whoever creates a stream first decides, later openers use it as it is. @default 1
   */
  replicas?: number;
}

interface Advisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

/** The bus on NATS JetStream. Dead letters come from max-delivery advisories, since JetStream has no DLQ. */
export class NatsBus implements Bus {
  readonly kind = "nats" as const;
  readonly metrics: BusMetrics | undefined;
  private readonly consumers = new Set<NatsConsumer>();
  private readonly movers = new Map<string, { sub: NatsSub; refs: number }>();
  private readonly retention = new Map<string, string>();
  private closed = false;

  private constructor(readonly nc: NatsConnection, readonly jsm: JetStreamManager, readonly js: JetStreamClient, metrics: BusMetrics | undefined, private readonly replicas: number) {
    this.metrics = metrics;
  }

  static async connect(opts: NatsBusOptions): Promise<NatsBus> {
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: opts.servers,
        name: opts.name ?? "burrow-bus",
        token: opts.token,
        user: opts.user,
        pass: opts.pass,
        reconnect: opts.reconnect ?? true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
      });
    } catch (e) {
      throw fromNatsError(e, "connect");
    }
    try {
      const jsm = await jetstreamManager(nc);
      const bus = new NatsBus(nc, jsm, jetstream(nc), opts.metrics, opts.replicas ?? 1);
      await bus.ensureStream({ name: DLQ_STREAM, subjects: DLQ_SUBJECTS, retention: "limits" });
      return bus;
    } catch (e) {
      await nc.close();
      throw fromNatsError(e, "jetstream");
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new BurrowError(Code.FailedPrecondition, "bus is closed");
  }

  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<void> {
    try {
      if (this.closed) throw new BurrowError(Code.FailedPrecondition, "bus is closed");
      assertLiteralSubject(subject);
      const h = opts === undefined ? outgoingHeaders(undefined) : outgoingHeaders(opts.headers, opts.context);
      const headers = h === undefined ? undefined : toNatsHeaders(h);
      this.nc.publish(subject, data, headers || opts?.reply ? { headers, reply: opts?.reply } : undefined);
    } catch (e) {
      return Promise.reject(fromNatsError(e, "publish"));
    }
    this.metrics?.published.inc({ backend: "nats", mode: "core" });
    return Promise.resolve();
  }

  async publishDurable(subject: string, data: Uint8Array, opts?: DurablePublishOptions): Promise<PubAck> {
    this.assertOpen();
    assertSubject(subject, false);
    if (opts?.signal?.aborted) throw abortError(opts.signal);
    const headers = toNatsHeaders(injectTrace(normalizeHeaders(opts?.headers), opts?.context));
    try {
      const a = await this.js.publish(subject, data, { headers, msgID: opts?.msgId, timeout: opts?.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS });
      if (!a.duplicate) this.metrics?.published.inc({ backend: "nats", mode: "durable" });
      return { stream: a.stream, seq: a.seq, duplicate: a.duplicate };
    } catch (e) {
      throw fromNatsError(e, `publish to "${subject}"`);
    }
  }

  subscribe(pattern: string, opts: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    assertSubject(pattern, true);
    let sub: NatsSub | undefined;
    const sink = new AsyncQueue<BusMsg>(opts.maxPending ?? DEFAULT_MAX_PENDING, () => sub?.unsubscribe());
    const metrics = this.metrics;
    sub = this.nc.subscribe(pattern, {
      queue: opts.queue,
      callback: (err, m) => {
        if (err) return sink.end(fromNatsError(err, `subscription ${pattern}`));
        if (sink.push(new NatsMsg(this.nc, m))) metrics?.delivered.inc({ backend: "nats", mode: "core" });
      },
    });
    return queueSubscription(pattern, sink, () => sub?.unsubscribe(), opts.signal);
  }

  async request(subject: string, data: Uint8Array, opts: CallOptions & { headers?: Record<string, string>; context?: PublishOptions["context"] } = {}): Promise<BusMsg> {
    this.assertOpen();
    assertSubject(subject, false);
    if (opts.signal?.aborted) throw abortError(opts.signal);
    const headers = toNatsHeaders(injectTrace(normalizeHeaders(opts.headers), opts.context));
    const p = this.nc.request(subject, data, { timeout: opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, headers });
    try {
      const m = opts.signal ? await raceAbort(p, opts.signal) : await p;
      return new NatsMsg(this.nc, m);
    } catch (e) {
      throw fromNatsError(e, `request to "${subject}"`);
    }
  }

  async ensureStream(cfg: StreamConfig, opts?: CallOptions): Promise<void> {
    this.assertOpen();
    if (opts?.signal?.aborted) throw abortError(opts.signal);
    assertName("stream", cfg.name);
    if (cfg.subjects.length === 0) throw new BurrowError(Code.InvalidArgument, "a stream needs at least one subject");
    for (const s of cfg.subjects) assertSubject(s, true);
    const sc = {
      name: cfg.name,
      subjects: cfg.subjects,
      retention: cfg.retention === "workqueue" ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: cfg.maxAgeMs ? nanos(cfg.maxAgeMs) : 0,
      max_msgs: cfg.maxMsgs ?? -1,
      max_bytes: cfg.maxBytes ?? -1,
      discard: DiscardPolicy.Old,
      ...(cfg.duplicateWindowMs ? { duplicate_window: nanos(cfg.duplicateWindowMs) } : {}),
    };
    try {
      await this.#replicated(() => this.jsm.streams.add({ ...sc, num_replicas: this.replicas }));
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === JS_ERR.streamNameInUse)) throw fromNatsError(e, `stream ${cfg.name}`);
      try {
        // The replica count stays as the stream's creator made it.
        const { name: _n, retention: _r, storage: _s, ...update } = sc;
        await this.#replicated(() => this.jsm.streams.update(cfg.name, update));
      } catch (e2) {
        throw fromNatsError(e2, `stream ${cfg.name}`);
      }
    }
    this.retention.set(cfg.name, cfg.retention ?? "limits");
  }

  /** A replicated stream's creation waits out JetStream's elections (jetstream-ready.ts); an unreplicated one fails at once. */
  #replicated<T>(step: () => Promise<T>): Promise<T> {
    return this.replicas > 1 ? whenJetStreamAnswers(step) : step();
  }

  async deleteStream(name: string): Promise<void> {
    this.assertOpen();
    try {
      await this.jsm.streams.delete(name);
    } catch (e) {
      throw fromNatsError(e, `delete stream ${name}`);
    }
  }

  async consumer(stream: string, cfg: ConsumerConfig, opts?: CallOptions): Promise<Consumer> {
    this.assertOpen();
    if (opts?.signal?.aborted) throw abortError(opts.signal);
    validateConsumerConfig(cfg);
    if (cfg.filterSubject !== undefined) assertSubject(cfg.filterSubject, true);
    const backoff = cfg.backoffMs?.length ? cfg.backoffMs : undefined;
    const cc = {
      durable_name: cfg.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: cfg.deliverPolicy === "new" ? DeliverPolicy.New : DeliverPolicy.All,
      ...(cfg.filterSubject ? { filter_subject: cfg.filterSubject } : {}),
      // With a backoff list the server times the first delivery by backoff[0]; say so explicitly.
      ack_wait: nanos(backoff ? backoff[0]! : (cfg.ackWaitMs ?? 30_000)),
      max_deliver: cfg.maxDeliver ?? -1,
      ...(backoff ? { backoff: backoff.map((ms) => nanos(ms)) } : {}),
    };
    try {
      await this.jsm.consumers.add(stream, cc);
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === JS_ERR.consumerNameExists)) throw fromNatsError(e, `consumer ${cfg.durable}`);
      try {
        const { durable_name: _d, deliver_policy: _p, filter_subject: _f, ...update } = cc as typeof cc & { filter_subject?: string };
        await this.jsm.consumers.update(stream, cfg.durable, update);
      } catch (e2) {
        throw fromNatsError(e2, `consumer ${cfg.durable}`);
      }
    }
    if (!this.retention.has(stream)) {
      try {
        const info = await this.jsm.streams.info(stream);
        this.retention.set(stream, info.config.retention === RetentionPolicy.Workqueue ? "workqueue" : "limits");
      } catch (e) {
        throw fromNatsError(e, `stream ${stream}`);
      }
    }
    const c = new NatsConsumer(this, this.nc, stream, cfg);
    this.consumers.add(c);
    if ((cfg.maxDeliver ?? -1) > 0) this.watchMaxDeliveries(stream, cfg.durable, c);
    return c;
  }

  /** Called by a consumer's close(). */
  forget(c: NatsConsumer): void {
    this.consumers.delete(c);
    const key = `${c.stream}.${c.durable}`;
    const m = this.movers.get(key);
    if (m && --m.refs === 0) {
      m.sub.unsubscribe();
      this.movers.delete(key);
    }
  }

  /**
   * JetStream stops delivering a message after max_deliver but keeps it. The advisory tells us which one: copy it
   * to the dead-letter stream (msg-id dedup makes concurrent movers harmless), then delete it from a work queue.
   */
  private watchMaxDeliveries(stream: string, durable: string, _c: NatsConsumer): void {
    const key = `${stream}.${durable}`;
    const existing = this.movers.get(key);
    if (existing) {
      existing.refs++;
      return;
    }
    const sub = this.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${durable}`, {
      callback: (_err, m) => {
        let a: Advisory;
        try {
          a = m.json<Advisory>();
        } catch {
          return;
        }
        void this.moveDeadLetter(a).catch(() => {
          // Another mover already deleted it, or the bus is closing: the dedup id keeps the DLQ consistent.
        });
      },
    });
    this.movers.set(key, { sub, refs: 1 });
  }

  private async moveDeadLetter(a: Advisory): Promise<void> {
    const sm = await this.jsm.streams.getMessage(a.stream, { seq: a.stream_seq });
    if (!sm) return;
    const headers: Record<string, string> = {};
    if (sm.header) for (const k of sm.header.keys()) headers[k.toLowerCase()] = sm.header.get(k);
    await this.deadLetterCopy(a.stream, a.consumer, a.stream_seq, sm.subject, sm.data, headers, a.deliveries, "max_deliver");
    await this.dropFromWorkQueue(a.stream, a.stream_seq);
  }

  /** A dead-lettered message leaves a work queue (as on the embedded bus); limits streams keep it for other consumers. */
  async dropFromWorkQueue(stream: string, seq: number): Promise<void> {
    if (this.retention.get(stream) !== "workqueue") return;
    await this.jsm.streams.deleteMessage(stream, seq, false).catch(() => undefined); // already gone is fine
  }

  async deadLetterCopy(stream: string, durable: string, seq: number, subject: string, data: Uint8Array, headers: MsgHeaders, deliveries: number, reason: DeadLetterReason, error?: string): Promise<void> {
    const h = deadLetterHeaders(headers, { reason, stream, durable, subject, seq, deliveries, error });
    const a = await this.js.publish(deadLetterSubject(stream, durable), data, { headers: toNatsHeaders(h), msgID: deadLetterMsgId(stream, seq) });
    if (!a.duplicate) this.metrics?.deadLettered.inc({ backend: "nats", reason });
  }

  async streamNames(): Promise<string[]> {
    this.assertOpen();
    try {
      const names: string[] = [];
      for await (const n of this.jsm.streams.names()) names.push(n);
      return names.sort();
    } catch (e) {
      throw fromNatsError(e, "stream names");
    }
  }

  async streamInfo(name: string, opts?: CallOptions & { subjectsFilter?: string }): Promise<StreamInfo> {
    this.assertOpen();
    try {
      const i = await this.jsm.streams.info(name, opts?.subjectsFilter ? { subjects_filter: opts.subjectsFilter } : undefined);
      const out: StreamInfo = { name, messages: i.state.messages, bytes: i.state.bytes, lastSeq: i.state.last_seq };
      // The server leaves `subjects` out when nothing matches the filter.
      if (opts?.subjectsFilter) out.subjects = { ...(i.state.subjects ?? {}) };
      return out;
    } catch (e) {
      throw fromNatsError(e, `stream ${name}`);
    }
  }

  async consumerInfos(stream: string): Promise<ConsumerInfo[]> {
    this.assertOpen();
    try {
      const out: ConsumerInfo[] = [];
      for await (const c of this.jsm.consumers.list(stream)) {
        out.push({ stream, durable: c.name, numPending: c.num_pending, numAckPending: c.num_ack_pending });
      }
      return out.sort((a, b) => (a.durable < b.durable ? -1 : a.durable > b.durable ? 1 : 0));
    } catch (e) {
      throw fromNatsError(e, `consumers of ${stream}`);
    }
  }

  async readMessage(stream: string, query: { fromSeq: number; subject?: string }): Promise<StoredMessage | null> {
    this.assertOpen();
    // STREAM.MSG.GET answers next_by_subj (first match at or after seq) since 2.9; the client's type only lists seq.
    const q = { seq: Math.max(1, query.fromSeq), next_by_subj: query.subject ?? ">" } as unknown as { seq: number };
    try {
      const sm = await this.jsm.streams.getMessage(stream, q);
      if (!sm) return null;
      const headers: Record<string, string> = {};
      if (sm.header) for (const k of sm.header.keys()) if (!k.toLowerCase().startsWith("nats-")) headers[k.toLowerCase()] = sm.header.get(k);
      return { stream, seq: sm.seq, subject: sm.subject, headers, data: sm.data, time: sm.time.getTime() };
    } catch (e) {
      throw fromNatsError(e, `read ${stream}`);
    }
  }

  async deleteMessage(stream: string, seq: number): Promise<boolean> {
    this.assertOpen();
    try {
      return await this.jsm.streams.deleteMessage(stream, seq, false);
    } catch (e) {
      if (e instanceof JetStreamApiError && (e.code === JS_ERR.noMessageFound || e.code === JS_ERR.msgDeleteFailed)) return false;
      throw fromNatsError(e, `delete from ${stream}`);
    }
  }

  async purgeStream(stream: string, opts?: CallOptions & { subject?: string }): Promise<number> {
    this.assertOpen();
    try {
      const r = await this.jsm.streams.purge(stream, opts?.subject ? { filter: opts.subject } : undefined);
      return r.purged;
    } catch (e) {
      throw fromNatsError(e, `purge ${stream}`);
    }
  }

  async kv(bucket: string, opts?: KvOptions & CallOptions): Promise<KV> {
    this.assertOpen();
    assertName("bucket", bucket);
    try {
      const kvm = new Kvm(this.nc);
      const config = { history: 1, ...(opts?.ttlMs ? { ttl: opts.ttlMs } : {}) };
      let kv: Awaited<ReturnType<Kvm["create"]>>;
      try {
        kv = await this.#replicated(() => kvm.create(bucket, this.replicas > 1 ? { ...config, replicas: this.replicas } : config));
      } catch (e) {
        // Made before with another replica count (by a node of an older version, or before --cluster): used as it is.
        if (!(this.replicas > 1 && e instanceof JetStreamApiError && e.code === JS_ERR.streamNameInUse)) throw e;
        kv = await kvm.open(bucket);
      }
      return new NatsKvBucket(bucket, kv, this.jsm);
    } catch (e) {
      throw fromNatsError(e, `kv ${bucket}`);
    }
  }

  async flush(): Promise<void> {
    try {
      await this.nc.flush();
    } catch (e) {
      throw fromNatsError(e, "flush");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const c of [...this.consumers]) await c.close();
    for (const m of this.movers.values()) m.sub.unsubscribe();
    this.movers.clear();
    if (!this.nc.isClosed()) await this.nc.close();
  }
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
