import type { BusMsg, DeadLetterNote, DurableMsg, MsgHeaders } from "../types.js";
import type { Claimed } from "./sqlite-store.js";

export interface Responder {
  publish(subject: string, data: Uint8Array, opts?: { headers?: Record<string, string> }): Promise<void>;
}

export class EmbeddedMsg implements BusMsg {
  constructor(
    private readonly bus: Responder,
    readonly subject: string,
    readonly data: Uint8Array,
    readonly headers: MsgHeaders,
    readonly reply: string | undefined,
  ) {}

  respond(data: Uint8Array, opts?: { headers?: Record<string, string> }): Promise<void> {
    if (this.reply === undefined) return Promise.resolve();
    return this.bus.publish(this.reply, data, opts);
  }
}

export interface AckTarget {
  ack(seq: number): Promise<void>;
  nak(seq: number, delayMs: number, error?: string): Promise<void>;
  term(seq: number, error?: string): Promise<void>;
  working(seq: number, deliveries: number): Promise<void>;
}

export class EmbeddedDurableMsg extends EmbeddedMsg implements DurableMsg {
  readonly stream: string;
  readonly seq: number;
  readonly deliveryCount: number;
  readonly msgId: string | undefined;

  constructor(bus: Responder, private readonly target: AckTarget, m: Claimed) {
    super(bus, m.subject, m.data, m.headers, undefined);
    this.stream = m.stream;
    this.seq = m.seq;
    this.deliveryCount = m.deliveries;
    this.msgId = m.msgId;
  }

  ack(): Promise<void> {
    return this.target.ack(this.seq);
  }
  nak(delayMs?: number, opts?: DeadLetterNote): Promise<void> {
    return this.target.nak(this.seq, delayMs ?? 0, opts?.error);
  }
  term(opts?: DeadLetterNote): Promise<void> {
    return this.target.term(this.seq, opts?.error);
  }
  working(): Promise<void> {
    return this.target.working(this.seq, this.deliveryCount);
  }
}
