import { createInbox, type Msg, type NatsConnection, type Subscription as NatsSub } from "@nats-io/transport-node";
import { nanos } from "@nats-io/transport-node";
import { BurrowError, Code } from "@burrow/protocol";
import { DEFAULT_NEXT_TIMEOUT_MS } from "../names.js";
import { Notifier } from "../signals.js";
import type { Consumer, ConsumerConfig, ConsumerInfo, DeadLetterNote, DurableMsg, NextOptions } from "../types.js";
import { fromNatsError } from "./nats-errors.js";
import { NatsMsg } from "./nats-msg.js";
import type { NatsBus } from "./nats-bus.js";

const enc = new TextEncoder();
const ACK = enc.encode("+ACK");
const WPI = enc.encode("+WPI");
const TERM = enc.encode("+TERM"); // no reason: nats-server 2.9 ignores term with a reason and redelivers
// A try-pull (timeoutMs 0) is no_wait, but 2.9 holds a no_wait pull while deliveries are unacknowledged; cap it.
const TRY_EXPIRES_MS = 20;
const MAX_PULL_EXPIRES_MS = 30_000;

/** Reads the delivery count and stream sequence from a JetStream ack subject (both the 2.9 and the domain form). */
function parseAckSubject(reply: string): { deliveries: number; seq: number } {
  const t = reply.split(".");
  const base = t.length >= 11 ? 4 : 2; // $JS.ACK.<domain>.<hash>.<stream>... vs $JS.ACK.<stream>...
  return { deliveries: Number(t[base + 2]), seq: Number(t[base + 3]) };
}

class NatsDurableMsg extends NatsMsg implements DurableMsg {
  readonly stream: string;
  readonly seq: number;
  readonly deliveryCount: number;

  constructor(nc: NatsConnection, msg: Msg, private readonly owner: NatsConsumer) {
    super(nc, msg);
    const a = parseAckSubject(msg.reply!);
    this.stream = owner.stream;
    this.seq = a.seq;
    this.deliveryCount = a.deliveries;
  }

  // The ack subject is our reply; the request side of BusMsg does not apply to stored messages.
  override get reply(): string | undefined {
    return undefined;
  }
  get msgId(): string | undefined {
    return this.headers["nats-msg-id"];
  }

  async ack(): Promise<void> {
    // A request, not a publish: resolving means the server recorded the ack, so "done" cannot come back.
    try {
      await this.nc.request(this.msg.reply!, ACK, { timeout: 5000 });
    } catch (e) {
      throw fromNatsError(e, "ack");
    }
  }
  async nak(delayMs?: number, opts?: DeadLetterNote): Promise<void> {
    // Nothing is left to retry after the last allowed delivery: dead-letter now instead of waiting for the advisory.
    const max = this.owner.maxDeliver;
    if (max > 0 && this.deliveryCount >= max) return this.finish("max_deliver", opts?.error);
    const body = delayMs && delayMs > 0 ? enc.encode(`-NAK ${JSON.stringify({ delay: nanos(delayMs) })}`) : enc.encode("-NAK");
    this.nc.publish(this.msg.reply!, body);
    await this.nc.flush();
  }
  term(opts?: DeadLetterNote): Promise<void> {
    return this.finish("terminated", opts?.error);
  }

  private async finish(reason: "terminated" | "max_deliver", error?: string): Promise<void> {
    await this.owner.bus.deadLetterCopy(this.stream, this.owner.durable, this.seq, this.subject, this.msg.data, this.headers, this.deliveryCount, reason, error);
    this.nc.publish(this.msg.reply!, TERM);
    await this.nc.flush();
    await this.owner.bus.dropFromWorkQueue(this.stream, this.seq);
  }
  async working(): Promise<void> {
    this.nc.publish(this.msg.reply!, WPI);
    await this.nc.flush();
  }
}

/**
 * A pull consumer driven by explicit one-message pull requests on a private inbox. One message per pull keeps
 * nothing prefetched, so priority lanes and failover behave as on the embedded bus: a consumer only ever holds
 * what its caller took.
 */
export class NatsConsumer implements Consumer {
  private readonly inbox = createInbox();
  private readonly sub: NatsSub;
  private readonly responses: Msg[] = [];
  private readonly arrived = new Notifier();
  private outstanding = 0;
  private closed = false;
  private readonly closing = new AbortController();
  private readonly nextSubject: string;
  private untrack: (() => void) | undefined;

  constructor(readonly bus: NatsBus, private readonly nc: NatsConnection, readonly stream: string, private readonly cfg: ConsumerConfig) {
    this.nextSubject = `$JS.API.CONSUMER.MSG.NEXT.${stream}.${cfg.durable}`;
    this.sub = nc.subscribe(this.inbox, {
      callback: (_err, m) => {
        if (this.closed) {
          // Nobody will take it: hand it back now rather than after the ack wait.
          if (m.reply && !isStatus(m)) nc.publish(m.reply, enc.encode("-NAK"));
          return;
        }
        this.responses.push(m);
        this.arrived.fire();
      },
    });
    this.untrack = bus.metrics?.trackLag(`nats:${stream}:${cfg.durable}:${this.inbox}`, () => this.info());
  }

  get durable(): string {
    return this.cfg.durable;
  }

  get maxDeliver(): number {
    return this.cfg.maxDeliver ?? -1;
  }

  private pull(timeoutMs: number): void {
    const body = timeoutMs <= 0
      ? { batch: 1, no_wait: true, expires: nanos(TRY_EXPIRES_MS) }
      : { batch: 1, expires: nanos(Math.min(Math.max(timeoutMs, 10), MAX_PULL_EXPIRES_MS)) };
    this.nc.publish(this.nextSubject, enc.encode(JSON.stringify(body)), { reply: this.inbox });
    this.outstanding++;
  }

  async next(opts: NextOptions = {}): Promise<DurableMsg | null> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_NEXT_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const signal = opts.signal ? AbortSignal.any([opts.signal, this.closing.signal]) : this.closing.signal;
    let pulled = false;
    for (;;) {
      if (this.closed) return null;
      const m = this.responses.shift();
      if (m) {
        this.outstanding--;
        if (!isStatus(m)) {
          const dm = new NatsDurableMsg(this.nc, m, this);
          this.bus.metrics?.delivered.inc({ backend: "nats", mode: "durable" });
          if (dm.deliveryCount > 1) this.bus.metrics?.redelivered.inc({ backend: "nats" });
          return dm;
        }
        const code = m.headers?.code ?? 0;
        if (code === 409 && m.headers?.description?.toLowerCase().includes("deleted")) {
          throw new BurrowError(Code.NotFound, `consumer "${this.cfg.durable}" was deleted`);
        }
        // 404 / 408: this pull ended empty. A try-pull or a spent deadline returns null.
        if (pulled && (timeoutMs <= 0 || Date.now() >= deadline)) return null;
        continue;
      }
      // Leftover pulls from an earlier, cancelled next() are still live; wait for them instead of piling on.
      if (this.outstanding === 0) {
        const remaining = deadline - Date.now();
        if (pulled && remaining <= 0) return null;
        this.pull(timeoutMs <= 0 ? 0 : remaining);
        pulled = true;
      }
      try {
        await this.arrived.wait(MAX_PULL_EXPIRES_MS + 5000, signal);
      } catch (e) {
        if (this.closed) return null;
        throw e;
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<DurableMsg> {
    while (!this.closed) {
      const m = await this.next({ timeoutMs: DEFAULT_NEXT_TIMEOUT_MS });
      if (m) yield m;
    }
  }

  async info(): Promise<ConsumerInfo> {
    try {
      const i = await this.bus.jsm.consumers.info(this.stream, this.cfg.durable);
      return { stream: this.stream, durable: this.cfg.durable, numPending: i.num_pending, numAckPending: i.num_ack_pending };
    } catch (e) {
      throw fromNatsError(e, "consumer info");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    this.untrack?.();
    for (const m of this.responses.splice(0)) if (m.reply && !isStatus(m)) this.nc.publish(m.reply, enc.encode("-NAK"));
    this.bus.forget(this);
    // Keep the inbox open briefly: a pull still in flight may deliver a message, which the callback hands back.
    if (this.outstanding > 0 && !this.nc.isClosed()) {
      setTimeout(() => this.sub.unsubscribe(), 200).unref();
    } else {
      this.sub.unsubscribe();
    }
  }
}

function isStatus(m: Msg): boolean {
  return !m.reply && (m.headers?.code ?? 0) > 0;
}
