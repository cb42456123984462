import type { ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Bus, PubAck } from "@burrow/bus";
import { assertClientSubject, bodyProps, decodeBody, encodeBody } from "./bus-errors.js";

interface PublishBody {
  subject: string;
  data?: string;
  dataBase64?: string;
  headers?: Record<string, string>;
  /** Store and acknowledge (a stream must cover the subject). */
  durable?: boolean;
  msgId?: string;
}

const SSE_PING_MS = 15_000;

export function registerPublishRoutes(app: FastifyInstance, bus: Bus, prefix: string, auth: (r: FastifyRequest) => Promise<void>): void {
  app.post<{ Body: PublishBody }>(`${prefix}/bus/publish`, {
    onRequest: auth,
    schema: {
      body: {
        type: "object",
        required: ["subject"],
        additionalProperties: false,
        properties: { subject: { type: "string", minLength: 1, maxLength: 512 }, durable: { type: "boolean" }, msgId: { type: "string", maxLength: 256 }, ...bodyProps },
      },
    },
  }, async (req, reply) => {
    const b = req.body;
    assertClientSubject(b.subject, false);
    const data = decodeBody(b);
    if (b.durable || b.msgId !== undefined) {
      const ack: PubAck = await bus.publishDurable(b.subject, data, { headers: b.headers, msgId: b.msgId });
      return reply.code(200).send(ack);
    }
    await bus.publish(b.subject, data, { headers: b.headers });
    return reply.code(202).send({});
  });

  // Server-sent events: `event: message` with {subject, data|dataBase64, headers}; a comment line every 15 s keeps
  // proxies from closing an idle stream. Ends when the client disconnects.
  app.get<{ Querystring: { subject: string; queue?: string } }>(`${prefix}/bus/subscribe`, {
    onRequest: auth,
    schema: {
      querystring: {
        type: "object",
        required: ["subject"],
        properties: { subject: { type: "string", minLength: 1, maxLength: 512 }, queue: { type: "string", maxLength: 128 } },
      },
    },
  }, async (req, reply: FastifyReply) => {
    const { subject, queue } = req.query;
    assertClientSubject(subject, true);
    const sub = await bus.subscribe(subject, queue ? { queue } : {});
    // Headers go out only once the broker has the subscription, so the client may publish right after.
    await bus.flush().catch(async (e: unknown) => {
      await sub.close();
      throw e;
    });
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
    res.write(": subscribed\n\n");
    const ping = setInterval(() => res.write(": ping\n\n"), SSE_PING_MS);
    const stop = () => void sub.close();
    req.raw.once("close", stop);
    res.once("close", stop);
    let id = 0;
    try {
      for await (const m of sub) {
        const ok = res.write(`event: message\nid: ${++id}\ndata: ${JSON.stringify({ subject: m.subject, headers: m.headers, ...encodeBody(m.data) })}\n\n`);
        // Respect backpressure: a slow client makes the subscription buffer (and drop, past its bound) instead of us.
        if (!ok) await drainedOrClosed(res);
        if (res.destroyed) break;
      }
    } finally {
      clearInterval(ping);
      await sub.close();
      if (!res.destroyed) res.end();
    }
  });
}

/**
 * Until the response drains or closes. Whichever comes first removes the other's listener: a long subscription
 * waits many times, and listeners left behind piled up on the response (Node warned at 11 'close' listeners).
 */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}
