import type { Msg, NatsConnection } from "@nats-io/transport-node";
import type { BusMsg, MsgHeaders } from "../types.js";
import { fromNatsHeaders, toNatsHeaders } from "./nats-headers.js";
import { normalizeHeaders } from "../trace.js";

export class NatsMsg implements BusMsg {
  private hdrs: MsgHeaders | undefined;

  constructor(protected readonly nc: NatsConnection, protected readonly msg: Msg) {}

  get subject(): string {
    return this.msg.subject;
  }
  get data(): Uint8Array {
    return this.msg.data;
  }
  get reply(): string | undefined {
    return this.msg.reply || undefined;
  }
  // Decoded lazily: most high-rate consumers never look at headers.
  get headers(): MsgHeaders {
    return (this.hdrs ??= fromNatsHeaders(this.msg.headers));
  }

  respond(data: Uint8Array, opts?: { headers?: Record<string, string> }): Promise<void> {
    if (!this.msg.reply) return Promise.resolve();
    this.nc.publish(this.msg.reply, data, { headers: toNatsHeaders(normalizeHeaders(opts?.headers)) });
    return Promise.resolve();
  }
}
