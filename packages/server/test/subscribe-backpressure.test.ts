// The bus's subscribe stream (GET /burrow/v1/bus/subscribe, server-sent events) waits for a slow client to drain,
// many times over one long subscription, without piling listeners up on the response: a client that reads in small
// bursts gets every message in order, and Node never warns of 11 'close' listeners (each wait used to leave one).
import { request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import Fastify, { type FastifyInstance } from "fastify";
import { createBus, type Bus } from "@burrow/bus";
import { registerPublishRoutes } from "../src/bus-api/publish-routes.js";

let app: FastifyInstance;
let bus: Bus;
let base: string;
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

beforeAll(async () => {
  process.on("warning", onWarning);
  bus = await createBus({ kind: "embedded", path: ":memory:" });
  app = Fastify();
  registerPublishRoutes(app, bus, "/burrow/v1", async () => undefined);
  await app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  process.off("warning", onWarning);
  await app.close();
  await bus.close();
});

it("a slow subscriber gets every message, and the stream's waits for it leave no listeners behind", { timeout: 60_000 }, async () => {
  const COUNT = 150;
  const payload = "x".repeat(64 * 1024);
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${base}/burrow/v1/bus/subscribe?subject=slow.topic`, resolve);
    req.on("error", reject);
    req.end();
  });
  expect(res.statusCode).toBe(200);
  let text = "";
  let seen = 0; // messages whose payload arrived whole
  const all = new Promise<void>((resolve) => {
    res.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      seen = [...text.matchAll(/"data":"\d+:x+"/g)].length;
      if (seen >= COUNT) resolve();
      // Read in bursts: pause after each chunk for a moment, so the server's writes fill the socket again and again.
      res.pause();
      setTimeout(() => res.resume(), 2);
    });
  });
  await new Promise((r) => setTimeout(r, 100)); // the subscription is in place once the head came; let it settle
  for (let i = 0; i < COUNT; i++) await bus.publish("slow.topic", new TextEncoder().encode(`${i}:${payload}`));
  await all;
  res.destroy();
  const ids = [...text.matchAll(/"data":"(\d+):/g)].map((m) => Number(m[1]));
  expect(ids).toEqual([...Array(COUNT).keys()]);
  await new Promise((r) => setImmediate(r));
  expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message)).toEqual([]);
});
