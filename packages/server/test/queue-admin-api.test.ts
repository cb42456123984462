// Queue depth and dead letters over REST, on the embedded bus and on a real nats-server: the routes answer alike.
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { EmbeddedBus, NatsBus, type Bus } from "@burrow/bus";
import { registerBusApi } from "../src/bus-api/index.js";
import { toE2bError } from "../src/errors.js";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>;

for (const backend of ["embedded", "nats"] as const) {
  describe(`queue admin REST (${backend})`, () => {
    let app: FastifyInstance;
    let bus: Bus;
    let nats: NatsServerFixture | undefined;
    let call: Call;
    const q = `jobs${Date.now().toString(36)}`;

    beforeAll(async () => {
      if (backend === "nats") {
        nats = await NatsServerFixture.start();
        bus = await NatsBus.connect({ servers: nats.url });
      } else bus = new EmbeddedBus({ path: ":memory:" });
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
        queueDefaults: { ackWaitMs: 5000, maxAttempts: 2, backoffMs: [0] },
      });
      await app.listen({ host: "127.0.0.1", port: 0 });
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/burrow/v1`;
      call = async (method, path, body) => {
        const res = await fetch(base + path, {
          method,
          headers: { "x-api-key": "secret", ...(body !== undefined ? { "content-type": "application/json" } : {}) },
          body: body !== undefined ? JSON.stringify(body) : undefined,
        });
        const text = await res.text();
        return { status: res.status, json: text ? JSON.parse(text) : undefined };
      };
    });

    afterAll(async () => {
      await app?.close();
      await bus?.close();
      await nats?.stop();
    });

    /** Consumes the next message and nacks it until it is dead (two attempts). */
    const kill = async () => {
      for (let attempt = 1; attempt <= 2; attempt++) {
        const m = await call("POST", `/queues/${q}/consume`, { timeoutMs: 5000 });
        expect(m.status).toBe(200);
        expect((await call("POST", `/queues/${q}/messages/${m.json.receipt}/nack`, { delayMs: 0, error: `failed attempt ${attempt}` })).status).toBe(204);
      }
    };

    it("answers 404 in the API's shape for a queue that does not exist, and does not make it", async () => {
      const res = await call("GET", "/queues/nosuch");
      expect(res).toEqual({ status: 404, json: { code: 404, message: 'queue "nosuch" not found' } });
      expect((await call("GET", "/queues/nosuch/dead-letters")).status).toBe(404);
      expect((await call("GET", "/queues")).json.map((d: { name: string }) => d.name)).not.toContain("nosuch");
      expect((await call("GET", "/queues/bad.name")).status).toBe(400);
    });

    it("shows depth, lists dead letters, requeues and drops them", async () => {
      expect((await call("POST", `/queues/${q}/messages`, { data: "first", priority: 6, headers: { "x-k": "v" } })).status).toBe(201);
      expect((await call("POST", `/queues/${q}/messages`, { data: "second" })).status).toBe(201);
      expect((await call("GET", `/queues/${q}`)).json).toEqual({ name: q, ready: 2, inFlight: 0, deadLetters: 0 });
      await kill(); // "first": priority 6 goes first
      const held = await call("POST", `/queues/${q}/consume`, { timeoutMs: 5000 });
      expect(held.json.data).toBe("second");
      expect((await call("GET", "/queues")).json.find((d: { name: string }) => d.name === q)).toEqual({ name: q, ready: 0, inFlight: 1, deadLetters: 1 });
      expect((await call("POST", `/queues/${q}/messages/${held.json.receipt}/ack`)).status).toBe(204);

      const list = await call("GET", `/queues/${q}/dead-letters`);
      expect(list.status).toBe(200);
      expect(list.json.total).toBe(1);
      expect(list.json.next).toBeNull();
      const [d] = list.json.items;
      expect(d).toMatchObject({ attempts: 2, reason: "max_deliver", lastError: "failed attempt 2", priority: 6, headers: { "x-k": "v" }, data: "first", dataBase64: Buffer.from("first").toString("base64") });
      expect(Date.parse(d.time)).toBeGreaterThan(Date.now() - 60_000);
      expect((await call("GET", `/queues/${q}/dead-letters/${d.seq}`)).json).toEqual(d);

      const back = await call("POST", `/queues/${q}/dead-letters/${d.seq}/requeue`);
      expect(back.status).toBe(200);
      expect((await call("GET", `/queues/${q}`)).json).toEqual({ name: q, ready: 1, inFlight: 0, deadLetters: 0 });
      expect((await call("POST", `/queues/${q}/dead-letters/${d.seq}/requeue`)).json).toEqual({ code: 404, message: `queue "${q}" has no dead letter ${d.seq}` });
      const again = await call("POST", `/queues/${q}/consume`, { timeoutMs: 5000 });
      expect([again.json.data, again.json.attempt, again.json.priority]).toEqual(["first", 1, 6]);
      expect((await call("POST", `/queues/${q}/messages/${again.json.receipt}/ack`)).status).toBe(204);

      // Three more dead letters: one dropped by id, one page at a time, then all requeued, then all dropped.
      for (const data of ["a", "b", "c"]) {
        await call("POST", `/queues/${q}/messages`, { data });
        await kill();
      }
      const page = await call("GET", `/queues/${q}/dead-letters?limit=2`);
      expect(page.json.items.map((i: { data: string }) => i.data)).toEqual(["a", "b"]);
      expect(page.json.total).toBe(3);
      const rest = await call("GET", `/queues/${q}/dead-letters?limit=2&after=${page.json.next}`);
      expect(rest.json.items.map((i: { data: string }) => i.data)).toEqual(["c"]);
      expect((await call("DELETE", `/queues/${q}/dead-letters/${page.json.items[0].seq}`)).status).toBe(204);
      expect((await call("DELETE", `/queues/${q}/dead-letters/${page.json.items[0].seq}`)).status).toBe(404);
      expect((await call("POST", `/queues/${q}/dead-letters/requeue`)).json).toEqual({ requeued: 2 });
      expect((await call("GET", `/queues/${q}`)).json).toEqual({ name: q, ready: 2, inFlight: 0, deadLetters: 0 });
      await kill();
      await kill();
      expect((await call("DELETE", `/queues/${q}/dead-letters`)).json).toEqual({ dropped: 2 });
      expect((await call("GET", `/queues/${q}`)).json).toEqual({ name: q, ready: 0, inFlight: 0, deadLetters: 0 });
    });
  });
}
