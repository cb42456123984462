import type { Context } from "@opentelemetry/api";
import { create } from "@bufbuild/protobuf";
import { envelopePb, BurrowError, Code } from "@burrow/protocol";
import { Channel } from "../channel.js";
import type { BusMetrics } from "../metrics.js";
import { extractTrace, injectTrace } from "../trace.js";
import type { Bus, Consumer, DurableMsg, PubAck } from "../types.js";
import type { AgentKey } from "./agent-key.js";
import { assertAgentId, type KeyRegistry } from "./key-registry.js";
import { AGENT_STREAM, AGENT_SUBJECTS, durableName, inboxSubject, routeSubject } from "./routes.js";
import { decodeEnvelope, encodeEnvelope, envelopePayload, routeOf, sealEnvelope, type Route, type SealOptions } from "./seal.js";
import { EnvelopeVerifier } from "./verifier.js";

export interface AgentMessengerOptions {
  bus: Bus;
  key: AgentKey;
  registry: KeyRegistry;
  /** Groups whose MULTICAST messages this agent receives. */
  groups?: string[];
  /** Receive BROADCAST messages. @default true */
  broadcasts?: boolean;
  /** @default 30000 */
  ackWaitMs?: number;
  /** Unacknowledged deliveries before a message is dead-lettered. @default 5 */
  maxDeliver?: number;
  /** Retention of undelivered agent messages in the shared stream. @default 86400000 */
  streamMaxAgeMs?: number;
  compressThresholdBytes?: number;
  replayWindowMs?: number;
  maxClockSkewMs?: number;
  metrics?: BusMetrics;
}

export interface SendOptions extends Omit<SealOptions, "now" | "traceparent" | "tracestate" | "compressThresholdBytes"> {
  /** Deliver to this relay first; the envelope still names the final target. */
  via?: string;
  /** Trace context to carry; defaults to the active context. */
  context?: Context;
  signal?: AbortSignal;
}

export interface ReceivedMessage {
  readonly envelope: envelopePb.Envelope;
  readonly route: Route;
  readonly from: string;
  /** Decompressed payload. */
  readonly payload: Uint8Array;
  /** False when this agent is only a relay for it (DIRECT to someone else). */
  readonly forMe: boolean;
  /** The sender's trace context, to parent or link this agent's span. */
  readonly traceContext: Context;
  readonly deliveryCount: number;
  ack(): Promise<void>;
  nak(delayMs?: number): Promise<void>;
}

/**
 * An agent's endpoint for signed messages: sends DIRECT, BROADCAST and MULTICAST envelopes and receives its own
 * through durable consumers, verifying each one. Rejected messages are acknowledged (so they are not redelivered),
 * counted, and never handed to the agent.
 */
export class AgentMessenger {
  readonly verifier: EnvelopeVerifier;
  private readonly consumers: Consumer[] = [];
  private readonly closing = new AbortController();

  private constructor(private readonly opts: AgentMessengerOptions) {
    this.verifier = new EnvelopeVerifier({
      registry: opts.registry,
      replayWindowMs: opts.replayWindowMs,
      maxClockSkewMs: opts.maxClockSkewMs,
      metrics: opts.metrics,
    });
  }

  get agentId(): string {
    return this.opts.key.agentId;
  }

  static async open(opts: AgentMessengerOptions): Promise<AgentMessenger> {
    assertAgentId(opts.key.agentId);
    const m = new AgentMessenger(opts);
    await ensureAgentStream(opts.bus, opts.streamMaxAgeMs);
    const id = opts.key.agentId;
    const common = { ackWaitMs: opts.ackWaitMs ?? 30_000, maxDeliver: opts.maxDeliver ?? 5 };
    // The inbox keeps what was sent before the agent first connected; broadcasts and groups start at joining time.
    const subs: { durable: string; filter: string; deliverPolicy: "all" | "new" }[] = [
      { durable: durableName("agent", id, "inbox"), filter: inboxSubject(id), deliverPolicy: "all" },
    ];
    if (opts.broadcasts ?? true) subs.push({ durable: durableName("agent", id, "bcast"), filter: "bcast.>", deliverPolicy: "new" });
    for (const g of opts.groups ?? []) {
      const filter = routeSubject({ type: "multicast", group: g, topic: "x" }).replace(/\.[^.]+$/, ".>");
      subs.push({ durable: durableName("agent", id, "group", g), filter, deliverPolicy: "new" });
    }
    for (const s of subs) {
      m.consumers.push(await opts.bus.consumer(AGENT_STREAM, { durable: s.durable, filterSubject: s.filter, deliverPolicy: s.deliverPolicy, ...common }));
    }
    return m;
  }

  async send(route: Route, payload: Uint8Array, opts: SendOptions = {}): Promise<PubAck> {
    const trace = injectTrace({}, opts.context);
    const e = sealEnvelope(this.opts.key, route, payload, {
      ...opts,
      traceparent: trace["traceparent"],
      tracestate: trace["tracestate"],
      compressThresholdBytes: this.opts.compressThresholdBytes,
    });
    const subject = opts.via ? inboxSubject(opts.via) : routeSubject(route);
    return this.publish(subject, e, opts.signal);
  }

  sendDirect(to: string, payload: Uint8Array, opts?: SendOptions): Promise<PubAck> {
    return this.send({ type: "direct", to }, payload, opts);
  }

  broadcast(topic: string, payload: Uint8Array, opts?: SendOptions): Promise<PubAck> {
    return this.send({ type: "broadcast", topic }, payload, opts);
  }

  multicast(group: string, payload: Uint8Array, opts?: SendOptions & { topic?: string }): Promise<PubAck> {
    return this.send({ type: "multicast", group, ...(opts?.topic ? { topic: opts.topic } : {}) }, payload, opts);
  }

  /**
   * Relays a message this agent received but is not its target: records this agent as a hop and passes it on,
   * to `via` or to the target. Refuses (ResourceExhausted, reason hop_limit) once the hop limit would be passed.
   */
  async forward(msg: ReceivedMessage, opts: { via?: string; signal?: AbortSignal } = {}): Promise<PubAck> {
    const e = msg.envelope;
    if (e.hopCount + 1 > e.maxHops) {
      throw new BurrowError(Code.ResourceExhausted, `message ${e.messageId} would exceed ${e.maxHops} hops`, { reason: "hop_limit" });
    }
    const next = create(envelopePb.EnvelopeSchema, { ...e, hopCount: e.hopCount + 1, hops: [...e.hops, this.agentId] });
    return this.publish(opts.via ? inboxSubject(opts.via) : routeSubject(msg.route), next, opts.signal);
  }

  private publish(subject: string, e: envelopePb.Envelope, signal?: AbortSignal): Promise<PubAck> {
    // The broker-level msg-id includes the hop count, so a relayed copy is not mistaken for a duplicate publish.
    return this.opts.bus.publishDurable(subject, encodeEnvelope(e), {
      msgId: `${e.sourceAgent}:${e.messageId}:${e.hopCount}`,
      headers: { "content-type": "application/x-burrow-envelope", ...(e.traceparent ? { traceparent: e.traceparent } : {}) },
      signal,
    });
  }

  /** Verified messages from every route this agent listens on, merged. Ends on close() or abort. */
  async *messages(opts: { signal?: AbortSignal } = {}): AsyncIterable<ReceivedMessage> {
    // Own controller too: a reader that breaks out of the loop must stop the pull loops as well.
    const done = new AbortController();
    const signals = [done.signal, this.closing.signal, ...(opts.signal ? [opts.signal] : [])];
    const signal = AbortSignal.any(signals);
    const ch = new Channel<ReceivedMessage>();
    const loops = this.consumers.map((c) => this.pump(c, ch, signal));
    const stop = () => ch.close();
    signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const m of ch) yield m;
    } finally {
      done.abort();
      ch.close();
      await Promise.allSettled(loops);
    }
  }

  private async pump(c: Consumer, ch: Channel<ReceivedMessage>, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let dm: DurableMsg | null;
      try {
        dm = await c.next({ timeoutMs: 5000, signal });
      } catch {
        return;
      }
      if (!dm) continue;
      const r = await this.open(dm);
      if (!r) continue;
      try {
        await ch.put(r, signal);
      } catch {
        return;
      }
    }
  }

  private async open(dm: DurableMsg): Promise<ReceivedMessage | undefined> {
    let e: envelopePb.Envelope;
    try {
      try {
        e = decodeEnvelope(dm.data);
      } catch (err) {
        this.verifier.count("malformed");
        throw err;
      }
      await this.verifier.verify(e, { redelivery: dm.deliveryCount > 1 });
      let payload: Uint8Array;
      try {
        payload = envelopePayload(e);
      } catch (err) {
        this.verifier.count("malformed");
        throw err;
      }
      const route = routeOf(e);
      return {
        envelope: e,
        route,
        from: e.sourceAgent,
        payload,
        forMe: route.type !== "direct" || route.to === this.agentId,
        traceContext: extractTrace(e.traceparent ? { traceparent: e.traceparent, ...(e.tracestate ? { tracestate: e.tracestate } : {}) } : {}),
        deliveryCount: dm.deliveryCount,
        ack: () => dm.ack(),
        nak: (d) => dm.nak(d),
      };
    } catch {
      // Rejected for good: acknowledge so the broker does not redeliver a forgery or a replay.
      await dm.ack().catch(() => undefined);
      return undefined;
    }
  }

  async close(): Promise<void> {
    this.closing.abort();
    for (const c of this.consumers) await c.close();
  }
}

export async function ensureAgentStream(bus: Bus, maxAgeMs = 86_400_000): Promise<void> {
  await bus.ensureStream({ name: AGENT_STREAM, subjects: AGENT_SUBJECTS, retention: "limits", maxAgeMs });
}

export function rejectedTotal(v: EnvelopeVerifier): number {
  return Object.values(v.rejected).reduce((a, b) => a + b, 0);
}
