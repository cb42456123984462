import { ROOT_CONTEXT, propagation, trace, TraceFlags, type Context, type TextMapPropagator } from "@opentelemetry/api";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentMessenger, BusKeyRegistry, EmbeddedBus, createBusMetrics, encodeEnvelope, extractTrace, generateAgentKey, inboxSubject, sealEnvelope } from "../src/index.js";

/** A minimal W3C traceparent propagator, standing in for an installed OpenTelemetry SDK. */
const w3c: TextMapPropagator = {
  inject(ctx, carrier, setter) {
    const sc = trace.getSpanContext(ctx);
    if (sc) setter.set(carrier, "traceparent", `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags}`);
  },
  extract(ctx, carrier, getter) {
    const v = getter.get(carrier, "traceparent");
    const m = typeof v === "string" ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-0(\d)$/.exec(v) : null;
    return m ? trace.setSpanContext(ctx, { traceId: m[1]!, spanId: m[2]!, traceFlags: Number(m[3]), isRemote: true }) : ctx;
  },
  fields: () => ["traceparent"],
};

const spanCtx = (): Context =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: TraceFlags.SAMPLED });

describe("trace context", () => {
  beforeAll(() => {
    propagation.setGlobalPropagator(w3c);
  });
  afterAll(() => {
    propagation.disable();
  });

  it("travels in bus headers from publisher to subscriber", async () => {
    const bus = new EmbeddedBus({ path: ":memory:" });
    const sub = bus.subscribe("t.x");
    await bus.publish("t.x", new Uint8Array([1]), { context: spanCtx() });
    const { value } = await sub[Symbol.asyncIterator]().next();
    expect(value!.headers["traceparent"]).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    expect(trace.getSpanContext(extractTrace(value!.headers, ROOT_CONTEXT))?.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    await bus.close();
  });

  it("travels inside signed envelopes end to end", async () => {
    const bus = new EmbeddedBus({ path: ":memory:" });
    const registry = await BusKeyRegistry.open(bus);
    const ka = generateAgentKey("a");
    const kb = generateAgentKey("b");
    await registry.register("a", ka.publicKey);
    await registry.register("b", kb.publicKey);
    const a = await AgentMessenger.open({ bus, key: ka, registry });
    const b = await AgentMessenger.open({ bus, key: kb, registry });
    await a.sendDirect("b", new Uint8Array([1]), { context: spanCtx() });
    for await (const m of b.messages()) {
      expect(m.envelope.traceparent).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
      expect(trace.getSpanContext(m.traceContext)?.spanId).toBe("00f067aa0ba902b7");
      await m.ack();
      break;
    }
    await a.close();
    await b.close();
    await bus.close();
  });
});

describe("metrics", () => {
  it("counts published, delivered, redelivered, dead-lettered, rejected and consumer lag", async () => {
    const registry = new Registry();
    const metrics = createBusMetrics(registry);
    const bus = new EmbeddedBus({ path: ":memory:", metrics });
    await bus.ensureStream({ name: "M", subjects: ["m.>"], retention: "workqueue" });
    for (let i = 0; i < 3; i++) await bus.publishDurable("m.x", new Uint8Array([i]));
    const c = await bus.consumer("M", { durable: "d", maxDeliver: 2 });
    const first = await c.next({ timeoutMs: 0 });
    await first!.nak();
    const again = await c.next({ timeoutMs: 0 });
    expect(again!.deliveryCount).toBe(2);
    await again!.nak(); // last allowed delivery: dead-lettered
    const lagText = await registry.getSingleMetricAsString("burrow_bus_consumer_lag");
    expect(lagText).toContain('burrow_bus_consumer_lag{stream="M",durable="d"} 2');
    // A forged envelope is rejected and counted.
    const keys = await BusKeyRegistry.open(bus);
    const kb = generateAgentKey("b");
    await keys.register("b", kb.publicKey);
    const b = await AgentMessenger.open({ bus, key: kb, registry: keys, metrics });
    const forger = generateAgentKey("a");
    await bus.publishDurable(inboxSubject("b"), encodeEnvelope(sealEnvelope(forger, { type: "direct", to: "b" }, new Uint8Array([9]))));
    const ac = new AbortController();
    const drained = (async () => { for await (const _ of b.messages({ signal: ac.signal })) break; })();
    const deadline = Date.now() + 5000;
    while (b.verifier.rejected.unknown_key < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    await drained;
    const text = await registry.metrics();
    expect(text).toMatch(/burrow_bus_published_total\{backend="embedded",mode="durable"\} [4-9]/);
    expect(text).toContain('burrow_bus_redelivered_total{backend="embedded"} 1');
    expect(text).toContain('burrow_bus_dead_lettered_total{backend="embedded",reason="max_deliver"} 1');
    expect(text).toContain('burrow_bus_rejected_messages_total{reason="unknown_key"} 1');
    expect(text).toMatch(/burrow_bus_delivered_total\{backend="embedded",mode="durable"\} [3-9]/);
    await b.close();
    await c.close();
    await bus.close();
  });
});
