import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { EmbeddedBus, generateAgentKey } from "../../src/index.js";
import { registerBusApi } from "../../../server/src/bus-api/index.js";
import { toE2bError } from "../../../server/src/errors.js";
import { BurrowApiError, BusClient } from "../../../sdk/src/bus/index.js";

// The REST/SSE API and the SDK client together, over a real HTTP listener on loopback and a real embedded bus.
describe("bus REST/SSE API with the SDK client", () => {
  let app: FastifyInstance;
  let bus: EmbeddedBus;
  let client: BusClient;
  let baseUrl: string;

  beforeAll(async () => {
    bus = new EmbeddedBus({ path: ":memory:" });
    app = Fastify();
    app.setErrorHandler((err, _req, reply) => {
      const { status, body } = toE2bError(err);
      void reply.code(status).send(body);
    });
    registerBusApi(app, {
      bus,
      authenticate: async (req) => {
        if (req.headers["x-api-key"] !== "secret") throw new BurrowError(Code.Unauthenticated, "invalid API key");
      },
      livenessWindowMs: 500,
      queueDefaults: { ackWaitMs: 1000, maxAttempts: 3, backoffMs: [100] },
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const addr = app.server.address() as { port: number };
    baseUrl = `http://127.0.0.1:${addr.port}`;
    client = new BusClient({ baseUrl, apiKey: "secret" });
  });

  afterAll(async () => {
    await app?.close();
    await bus?.close();
  });

  it("refuses requests without a valid API key, in the E2B error shape", async () => {
    const bad = new BusClient({ baseUrl, apiKey: "wrong" });
    await expect(bad.bus.publish("a.b", "x")).rejects.toMatchObject({ status: 401, code: Code.Unauthenticated, message: "invalid API key" });
    const res = await fetch(`${baseUrl}/burrow/v1/bus/publish`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "secret" }, body: "{}" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 400 });
  });

  it("publishes and streams messages to a wildcard subscriber over SSE", async () => {
    const ac = new AbortController();
    const sub = await client.bus.subscribe("orders.*.created", { signal: ac.signal });
    await client.bus.publish("orders.42.created", "first", { headers: { "x-k": "v" } });
    await client.bus.publish("orders.42.deleted", "not matched");
    await client.bus.publish("orders.43.created", new Uint8Array([0xff, 0x00, 0x01]));
    const got = [];
    for await (const m of sub) {
      got.push(m);
      if (got.length === 2) break;
    }
    expect(got[0]).toMatchObject({ subject: "orders.42.created", text: "first", headers: { "x-k": "v" } });
    expect(got[1]!.subject).toBe("orders.43.created");
    expect([...got[1]!.data]).toEqual([0xff, 0x00, 0x01]);
    expect(got[1]!.text).toBeUndefined();
    ac.abort();
  });

  it("refuses reserved subjects", async () => {
    await expect(client.bus.publish("$JS.API.STREAM.DELETE.X", "x")).rejects.toMatchObject({ status: 403, code: Code.PermissionDenied });
    await expect(client.bus.subscribe(">")).rejects.toBeInstanceOf(BurrowApiError);
  });

  it("publishes durably with msgId de-duplication", async () => {
    await bus.ensureStream({ name: "API", subjects: ["api.>"] });
    const a = await client.bus.publish("api.x", "1", { msgId: "m1" });
    const b = await client.bus.publish("api.x", "1", { msgId: "m1" });
    expect(a).toMatchObject({ stream: "API", duplicate: false });
    expect(b).toMatchObject({ stream: "API", seq: a.seq, duplicate: true });
    await expect(client.bus.publish("nostream.x", "1", { durable: true })).rejects.toMatchObject({ status: 404 });
  });

  it("runs a queue: priorities, ack, nack with redelivery", async () => {
    await client.queue.enqueue("jobs", "low", { priority: 1 });
    await client.queue.enqueue("jobs", "high", { priority: 8, msgId: "h" });
    expect((await client.queue.enqueue("jobs", "high", { priority: 8, msgId: "h" })).duplicate).toBe(true);
    const m1 = await client.queue.next("jobs");
    expect(m1).toMatchObject({ text: "high", priority: 8, attempt: 1, msgId: "h" });
    await m1!.ack();
    await expect(m1!.ack()).rejects.toMatchObject({ status: 404 }); // receipt is spent
    const m2 = await client.queue.next("jobs");
    expect(m2).toMatchObject({ text: "low", attempt: 1 });
    await m2!.nack({ delayMs: 50 });
    const ac = new AbortController();
    for await (const m of client.queue.consume("jobs", { signal: ac.signal, waitMs: 2000 })) {
      expect(m).toMatchObject({ text: "low", attempt: 2 });
      await m.ack();
      ac.abort();
    }
    expect(await client.queue.next("jobs", { timeoutMs: 0 })).toBeNull();
  });

  it("registers agent keys and tracks heartbeats up and down", async () => {
    const key = generateAgentKey("agent-7");
    const r = await client.agent.registerKey("agent-7", key.publicKey);
    expect(r).toEqual({ agentId: "agent-7", keyId: key.keyId });
    await expect(client.agent.registerKey("agent-7", new Uint8Array(5))).rejects.toMatchObject({ status: 400 });
    await expect(client.agent.status("agent-7")).rejects.toMatchObject({ status: 404 });
    await client.agent.heartbeat("agent-7", { group: "workers" });
    expect(await client.agent.status("agent-7")).toMatchObject({ agentId: "agent-7", group: "workers", state: "up" });
    let s = await client.agent.status("agent-7");
    const deadline = Date.now() + 10_000;
    while (s.state === "up" && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 100));
      s = await client.agent.status("agent-7");
    }
    expect(s.state).toBe("down");
  });
});
