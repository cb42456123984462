import type { Context } from "@opentelemetry/api";

/** Header names are lower-case on the way in and out, as in fetch's Headers. `nats-*` names are reserved. */
export type MsgHeaders = Readonly<Record<string, string>>;

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface PublishOptions {
  headers?: Record<string, string>;
  /** Reply subject for request/reply. */
  reply?: string;
  /** Context whose trace is injected as `traceparent`; defaults to the active context. */
  context?: Context;
}

export interface DurablePublishOptions extends CallOptions {
  headers?: Record<string, string>;
  /** De-duplication id: a second publish with the same id inside the stream's window is acknowledged, not stored. */
  msgId?: string;
  context?: Context;
}

export interface PubAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

/** A delivered message. `respond` answers a request (no-op when there is no reply subject). */
export interface BusMsg {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHeaders;
  readonly reply: string | undefined;
  respond(data: Uint8Array, opts?: { headers?: Record<string, string> }): Promise<void>;
}

export interface SubscribeOptions {
  /** Queue group: each message goes to one member of the group instead of every subscriber. */
  queue?: string;
  /** Buffered messages before new ones are dropped and counted in `dropped`. @default 65536 */
  maxPending?: number;
  /** Closes the subscription when aborted. */
  signal?: AbortSignal;
}

/** A live, at-most-once subscription. Iterate it; `break` or `close()` ends it. */
export interface Subscription extends AsyncIterable<BusMsg> {
  readonly pattern: string;
  /** Messages dropped because the reader fell more than `maxPending` behind. */
  readonly dropped: number;
  close(): Promise<void>;
}

export type Retention = "limits" | "workqueue";

export interface StreamConfig {
  /** [A-Za-z0-9_-]+ */
  name: string;
  subjects: string[];
  /** `workqueue`: a message is removed once acknowledged. @default "limits" */
  retention?: Retention;
  maxAgeMs?: number;
  maxMsgs?: number;
  /**
   * Bytes the stream may hold (each message counts its subject, headers and data); past it the oldest messages are
   * discarded, as JetStream's max_bytes with discard "old". Unlimited when absent.
   */
  maxBytes?: number;
  /** @default 120000 (NATS's default) */
  duplicateWindowMs?: number;
}

export interface ConsumerConfig {
  /** Durable name, [A-Za-z0-9_-]+. Every consumer opened with the same name shares one position and competes for messages. */
  durable: string;
  filterSubject?: string;
  /** Time a delivery may stay unacknowledged before it is redelivered. @default 30000 */
  ackWaitMs?: number;
  /** Deliveries before the message is dead-lettered; -1 is unlimited. @default -1 */
  maxDeliver?: number;
  /** When set, the n-th delivery waits backoffMs[n-1] (last value repeats) instead of ackWaitMs. Needs maxDeliver > length. */
  backoffMs?: number[];
  /** @default "all" */
  deliverPolicy?: "all" | "new";
}

/** What a consumer says when it gives a message up: kept with the dead letter (header `burrow-dlq-error`). */
export interface DeadLetterNote {
  error?: string;
}

export interface DurableMsg extends BusMsg {
  readonly stream: string;
  readonly seq: number;
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  readonly msgId: string | undefined;
  /** Acknowledge: the message is done and is not redelivered. */
  ack(): Promise<void>;
  /**
   * Negative-acknowledge: redeliver after `delayMs` (immediately when omitted). `error` says why; it is kept with the
   * dead letter when this was the last allowed delivery.
   */
  nak(delayMs?: number, opts?: DeadLetterNote): Promise<void>;
  /** Give up: the message goes to the dead-letter stream with reason `terminated` and is never redelivered. */
  term(opts?: DeadLetterNote): Promise<void>;
  /** Still working: restart the ack timer. */
  working(): Promise<void>;
}

export interface ConsumerInfo {
  stream: string;
  durable: string;
  /** Messages matching the filter not yet delivered. */
  numPending: number;
  /** Delivered, not yet acknowledged. */
  numAckPending: number;
}

export interface NextOptions {
  signal?: AbortSignal;
  /** How long to wait for a message; 0 only takes one that is ready now. @default 5000 */
  timeoutMs?: number;
}

/** A durable pull consumer. Iterating it pulls until close(); next() pulls one. */
export interface Consumer extends AsyncIterable<DurableMsg> {
  readonly stream: string;
  readonly durable: string;
  /** Resolves to null when nothing arrived in time. */
  next(opts?: NextOptions): Promise<DurableMsg | null>;
  info(opts?: CallOptions): Promise<ConsumerInfo>;
  /** Stops pulling. Messages this consumer holds unacknowledged are redelivered after their ack wait. */
  close(): Promise<void>;
}

export interface KvEntry {
  key: string;
  value: Uint8Array;
  revision: number;
}

/** A key-value bucket. Revisions are per bucket and increase on every write. */
export interface KV {
  readonly bucket: string;
  get(key: string, opts?: CallOptions): Promise<KvEntry | null>;
  put(key: string, value: Uint8Array, opts?: CallOptions): Promise<number>;
  /** Fails with AlreadyExists when the key has a live value. */
  create(key: string, value: Uint8Array, opts?: CallOptions): Promise<number>;
  /** Compare-and-set: fails with Aborted (reason revision_conflict) unless the key's revision is `revision`. */
  update(key: string, value: Uint8Array, revision: number, opts?: CallOptions): Promise<number>;
  delete(key: string, opts?: CallOptions): Promise<void>;
  /** The keys with a live value, sorted. */
  keys(opts?: CallOptions): Promise<string[]>;
  /** Every live entry, sorted by key. */
  entries(opts?: CallOptions): Promise<KvEntry[]>;
}

export interface KvOptions {
  /** Entries older than this read as absent. Expiry is never announced (NATS 2.9/2.10 cannot), so poll. */
  ttlMs?: number;
}

export interface StreamInfo {
  name: string;
  /** Messages stored now. */
  messages: number;
  bytes: number;
  lastSeq: number;
  /** Stored messages per subject, for the subjects matching `subjectsFilter` when one was asked for. */
  subjects?: Record<string, number>;
}

/** A message as a stream stores it, read without delivering it. */
export interface StoredMessage {
  stream: string;
  seq: number;
  subject: string;
  headers: MsgHeaders;
  data: Uint8Array;
  /** When the stream stored it, ms since the epoch. */
  time: number;
}

export type BusKind = "embedded" | "nats";

/**
 * The bus: NATS semantics on both backends. Core messages (publish/subscribe/request) are at-most-once to
 * live subscribers; any stream whose subjects cover a subject also stores it, and durable consumers read streams.
 */
export interface Bus {
  readonly kind: BusKind;
  /**
   * Fire-and-forget; also stored (without acknowledgement) by any stream covering the subject. Resolves at once.
   * For bursts, do not await each call: on NATS every await lets nats.js flush the socket for one message;
   * publish the burst and `await flush()` (or the last promise) instead.
   */
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<void>;
  /** Stored and acknowledged by the stream covering the subject; NotFound when no stream covers it. */
  publishDurable(subject: string, data: Uint8Array, opts?: DurablePublishOptions): Promise<PubAck>;
  subscribe(pattern: string, opts?: SubscribeOptions): Subscription;
  /** Unavailable when nobody listens, DeadlineExceeded when nobody answers in time (default 5000 ms). */
  request(subject: string, data: Uint8Array, opts?: CallOptions & { headers?: Record<string, string>; context?: Context }): Promise<BusMsg>;
  /** Creates the stream, or updates it to this configuration. */
  ensureStream(cfg: StreamConfig, opts?: CallOptions): Promise<void>;
  deleteStream(name: string, opts?: CallOptions): Promise<void>;
  /** Creates (or binds to) a durable consumer and opens a puller on it. */
  consumer(stream: string, cfg: ConsumerConfig, opts?: CallOptions): Promise<Consumer>;
  // Operating streams: these read without delivering or changing anything, unlike consumer(), which creates a
  // durable or rewrites its settings; deletes and purges are explicit.
  streamNames(opts?: CallOptions): Promise<string[]>;
  /** NotFound when there is no such stream. */
  streamInfo(name: string, opts?: CallOptions & { subjectsFilter?: string }): Promise<StreamInfo>;
  /** Every durable consumer's counts on a stream. */
  consumerInfos(stream: string, opts?: CallOptions): Promise<ConsumerInfo[]>;
  /** The first stored message at or after `fromSeq` whose subject matches `subject` (any when absent); null when none. */
  readMessage(stream: string, query: { fromSeq: number; subject?: string }, opts?: CallOptions): Promise<StoredMessage | null>;
  /** False when the message was not stored (any more). */
  deleteMessage(stream: string, seq: number, opts?: CallOptions): Promise<boolean>;
  /** Removes the stored messages matching `subject` (all when absent); resolves to how many went. */
  purgeStream(stream: string, opts?: CallOptions & { subject?: string }): Promise<number>;
  kv(bucket: string, opts?: KvOptions & CallOptions): Promise<KV>;
  /** Resolves when everything published so far has reached the server. */
  flush(opts?: CallOptions): Promise<void>;
  close(): Promise<void>;
}
