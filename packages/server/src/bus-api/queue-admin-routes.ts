// Operating queues over HTTP: depth and dead letters. Read through QueueAdmin, never through the queue gateway's
// consumers, so looking at a queue neither creates it nor rewrites its consumers' settings.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { QueueAdmin, type Bus, type DeadLetter } from "@burrow/bus";
import type { DeadLetterPageWire, DeadLetterWire, DroppedAllWire, QueueDepthWire, RequeuedAllWire } from "@burrow/protocol";
import { encodeBody } from "./bus-errors.js";

const name = { type: "string", pattern: "^[A-Za-z0-9_-]{1,57}$" } as const;
const nameParams = { type: "object", required: ["name"], properties: { name } } as const;
const seqParams = { type: "object", required: ["name", "seq"], properties: { name, seq: { type: "integer", minimum: 1 } } } as const;

function deadLetterJson(d: DeadLetter): DeadLetterWire {
  return {
    seq: d.seq,
    attempts: d.attempts,
    reason: d.reason,
    lastError: d.lastError ?? null,
    time: new Date(d.time).toISOString(),
    priority: d.priority ?? null,
    queueSeq: d.queueSeq,
    headers: d.headers,
    ...encodeBody(d.data),
  };
}

export function registerQueueAdminRoutes(app: FastifyInstance, bus: Bus, prefix: string, auth: (r: FastifyRequest) => Promise<void>): void {
  const admin = new QueueAdmin(bus);
  // Aborted when the client goes away: the response closing before it was written.
  const signalOf = (reply: FastifyReply) => {
    const ac = new AbortController();
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) ac.abort();
    });
    return ac.signal;
  };

  // A team key sees its own queues only, under the names it gave them (teams/bus-names.ts filters this list).
  app.get(`${prefix}/queues`, { onRequest: auth }, async (req, reply) => admin.list({ signal: signalOf(reply) }));

  app.get<{ Params: { name: string } }>(`${prefix}/queues/:name`, { onRequest: auth, schema: { params: nameParams } }, async (req, reply): Promise<QueueDepthWire> => {
    const d = await admin.depth(req.params.name, { signal: signalOf(reply) });
    return { ...d, name: req.params.name };
  });

  app.get<{ Params: { name: string }; Querystring: { after?: number; limit?: number } }>(
    `${prefix}/queues/:name/dead-letters`,
    {
      onRequest: auth,
      schema: {
        params: nameParams,
        querystring: { type: "object", properties: { after: { type: "integer", minimum: 0 }, limit: { type: "integer", minimum: 1, maximum: 500 } } },
      },
    },
    async (req, reply): Promise<DeadLetterPageWire> => {
      const page = await admin.deadLetters(req.params.name, { after: req.query.after, limit: req.query.limit, signal: signalOf(reply) });
      return { items: page.items.map(deadLetterJson), total: page.total, next: page.next ?? null };
    },
  );

  app.get<{ Params: { name: string; seq: number } }>(`${prefix}/queues/:name/dead-letters/:seq`, { onRequest: auth, schema: { params: seqParams } }, async (req, reply) =>
    deadLetterJson(await admin.deadLetter(req.params.name, req.params.seq, { signal: signalOf(reply) })),
  );

  app.post<{ Params: { name: string; seq: number } }>(`${prefix}/queues/:name/dead-letters/:seq/requeue`, { onRequest: auth, schema: { params: seqParams } }, async (req, reply) =>
    admin.requeue(req.params.name, req.params.seq, { signal: signalOf(reply) }),
  );

  app.post<{ Params: { name: string } }>(`${prefix}/queues/:name/dead-letters/requeue`, { onRequest: auth, schema: { params: nameParams } }, async (req, reply): Promise<RequeuedAllWire> => ({
    requeued: await admin.requeueAll(req.params.name, { signal: signalOf(reply) }),
  }));

  app.delete<{ Params: { name: string; seq: number } }>(`${prefix}/queues/:name/dead-letters/:seq`, { onRequest: auth, schema: { params: seqParams } }, async (req, reply) => {
    await admin.drop(req.params.name, req.params.seq, { signal: signalOf(reply) });
    return reply.code(204).send();
  });

  app.delete<{ Params: { name: string } }>(`${prefix}/queues/:name/dead-letters`, { onRequest: auth, schema: { params: nameParams } }, async (req, reply): Promise<DroppedAllWire> => ({
    dropped: await admin.dropAll(req.params.name, { signal: signalOf(reply) }),
  }));
}
