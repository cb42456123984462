import { BurrowError, Code } from "@burrow/protocol";
import { DEFAULT_NEXT_TIMEOUT_MS, redeliveryDelayMs } from "../names.js";
import type { Consumer, ConsumerConfig, ConsumerInfo, DurableMsg, NextOptions } from "../types.js";
import { EmbeddedDurableMsg, type AckTarget } from "./embedded-msg.js";
import type { EmbeddedBus } from "./embedded-bus.js";

// Another process may write the same SQLite file without notifying us; never sleep longer than this.
const MAX_IDLE_POLL_MS = 1000;

export class EmbeddedConsumer implements Consumer, AckTarget {
  private readonly closing = new AbortController();
  private untrack: (() => void) | undefined;

  constructor(private readonly bus: EmbeddedBus, readonly stream: string, private readonly cfg: ConsumerConfig) {
    this.untrack = bus.metrics?.trackLag(`embedded:${stream}:${cfg.durable}:${Math.random()}`, () => this.info());
  }

  get durable(): string {
    return this.cfg.durable;
  }

  async next(opts: NextOptions = {}): Promise<DurableMsg | null> {
    const deadline = Date.now() + (opts.timeoutMs ?? DEFAULT_NEXT_TIMEOUT_MS);
    const signal = opts.signal ? AbortSignal.any([opts.signal, this.closing.signal]) : this.closing.signal;
    for (;;) {
      if (this.closing.signal.aborted) return null;
      if (opts.signal?.aborted) throw BurrowError.from(opts.signal.reason, Code.Canceled);
      const now = Date.now();
      const claimed = this.bus.claim(this.stream, this.cfg, now);
      if (claimed) return new EmbeddedDurableMsg(this.bus, this, claimed);
      const remaining = deadline - now;
      if (remaining <= 0) return null;
      const due = this.bus.store.nextDue(this.stream, this.cfg.durable);
      const wait = Math.min(remaining, due === undefined ? MAX_IDLE_POLL_MS : Math.max(1, due - now), MAX_IDLE_POLL_MS);
      try {
        await this.bus.notifier(this.stream).wait(wait, signal);
      } catch (e) {
        if (this.closing.signal.aborted) return null;
        throw e;
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<DurableMsg> {
    while (!this.closing.signal.aborted) {
      const m = await this.next({ timeoutMs: DEFAULT_NEXT_TIMEOUT_MS });
      if (m) yield m;
    }
  }

  info(): Promise<ConsumerInfo> {
    const i = this.bus.store.consumerInfo(this.stream, this.cfg);
    return Promise.resolve({ stream: this.stream, durable: this.cfg.durable, ...i });
  }

  close(): Promise<void> {
    this.closing.abort();
    this.bus.forget(this);
    this.untrack?.();
    this.untrack = undefined;
    return Promise.resolve();
  }

  // ---- AckTarget ----

  ack(seq: number): Promise<void> {
    this.bus.store.ack(this.stream, this.cfg.durable, seq);
    return Promise.resolve();
  }

  nak(seq: number, delayMs: number, error?: string): Promise<void> {
    // Nothing is left to retry after the last allowed delivery: dead-letter now rather than at the next pull.
    const max = this.cfg.maxDeliver ?? -1;
    if (max > 0 && (this.bus.store.pendingDeliveries(this.stream, this.cfg.durable, seq) ?? 0) >= max) {
      this.bus.deadLetterNow(this.stream, this.cfg.durable, seq, error);
      return Promise.resolve();
    }
    if (this.bus.store.reschedule(this.stream, this.cfg.durable, seq, Date.now() + Math.max(0, delayMs))) {
      this.bus.notifier(this.stream).fire();
    }
    return Promise.resolve();
  }

  term(seq: number, error?: string): Promise<void> {
    this.bus.term(this.stream, this.cfg.durable, seq, error);
    return Promise.resolve();
  }

  working(seq: number, deliveries: number): Promise<void> {
    this.bus.store.reschedule(this.stream, this.cfg.durable, seq, Date.now() + redeliveryDelayMs(this.cfg, deliveries));
    return Promise.resolve();
  }
}
