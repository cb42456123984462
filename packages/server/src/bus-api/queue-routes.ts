import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { WorkQueue, type Bus, type QueueConsumer, type QueueMessage } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import { bodyProps, decodeBody, encodeBody } from "./bus-errors.js";

export interface QueueApiDefaults {
  ackWaitMs?: number;
  maxAttempts?: number;
  backoffMs?: number[];
}

interface Held {
  msg: QueueMessage;
  expires: number;
}

/**
 * Queues over HTTP: a consume hands out one message with a receipt; ack/nack name the receipt. Receipts lapse after
 * twice the ack wait (the bus has redelivered the message by then), so the map cannot grow without bound.
 */
export class QueueGateway {
  private readonly queues = new Map<string, Promise<{ q: WorkQueue; c: QueueConsumer }>>();
  private readonly held = new Map<string, Held>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly bus: Bus, private readonly defaults: QueueApiDefaults) {
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [r, h] of this.held) if (h.expires < now) this.held.delete(r);
    }, 5000);
    this.sweeper.unref();
  }

  queue(name: string): Promise<{ q: WorkQueue; c: QueueConsumer }> {
    let p = this.queues.get(name);
    if (!p) {
      p = (async () => {
        const q = await WorkQueue.open(this.bus, { name, ...this.defaults });
        return { q, c: await q.consumer() };
      })();
      p.catch(() => this.queues.delete(name));
      this.queues.set(name, p);
    }
    return p;
  }

  hold(msg: QueueMessage, ackWaitMs: number): string {
    const receipt = randomUUID();
    this.held.set(receipt, { msg, expires: Date.now() + 2 * ackWaitMs });
    return receipt;
  }

  take(receipt: string): QueueMessage {
    const h = this.held.get(receipt);
    if (!h) throw new BurrowError(Code.NotFound, "unknown or expired receipt");
    this.held.delete(receipt);
    return h.msg;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const p of this.queues.values()) await p.then(({ c }) => c.close(), () => undefined);
    this.queues.clear();
    this.held.clear();
  }
}

const nameParams = { type: "object", required: ["name"], properties: { name: { type: "string", pattern: "^[A-Za-z0-9_-]{1,57}$" } } } as const;

export function registerQueueRoutes(app: FastifyInstance, gw: QueueGateway, prefix: string, auth: (r: FastifyRequest) => Promise<void>): void {
  app.post<{ Params: { name: string }; Body: { data?: string; dataBase64?: string; headers?: Record<string, string>; priority?: number; msgId?: string } }>(
    `${prefix}/queues/:name/messages`,
    {
      onRequest: auth,
      schema: {
        params: nameParams,
        body: { type: "object", additionalProperties: false, properties: { ...bodyProps, priority: { type: "integer", minimum: 0, maximum: 9 }, msgId: { type: "string", maxLength: 256 } } },
      },
    },
    async (req, reply) => {
      const { q } = await gw.queue(req.params.name);
      const b = req.body;
      const ack = await q.enqueue(decodeBody(b), { priority: b.priority ?? 0, msgId: b.msgId, headers: b.headers });
      return reply.code(201).send({ seq: ack.seq, duplicate: ack.duplicate });
    },
  );

  app.post<{ Params: { name: string }; Body: { timeoutMs?: number } | undefined }>(
    `${prefix}/queues/:name/consume`,
    {
      onRequest: auth,
      schema: { params: nameParams, body: { type: "object", nullable: true, properties: { timeoutMs: { type: "integer", minimum: 0, maximum: 30_000 } } } },
    },
    async (req, reply) => {
      const { q, c } = await gw.queue(req.params.name);
      const ac = new AbortController();
      req.raw.once("close", () => ac.abort());
      const m = await c.next({ timeoutMs: req.body?.timeoutMs ?? 0, signal: ac.signal });
      if (!m) return reply.code(204).send();
      const receipt = gw.hold(m, q.opts.ackWaitMs);
      return reply.code(200).send({ receipt, priority: m.priority, attempt: m.attempt, msgId: m.msgId ?? null, headers: m.headers, ...encodeBody(m.data) });
    },
  );

  const receiptParams = { type: "object", required: ["name", "receipt"], properties: { name: nameParams.properties.name, receipt: { type: "string", maxLength: 64 } } } as const;

  app.post<{ Params: { name: string; receipt: string } }>(`${prefix}/queues/:name/messages/:receipt/ack`, { onRequest: auth, schema: { params: receiptParams } }, async (req, reply) => {
    const m = gw.take(req.params.receipt);
    await m.ack();
    return reply.code(204).send();
  });

  app.post<{ Params: { name: string; receipt: string }; Body: { delayMs?: number; error?: string } | undefined }>(
    `${prefix}/queues/:name/messages/:receipt/nack`,
    {
      onRequest: auth,
      schema: {
        params: receiptParams,
        body: { type: "object", nullable: true, properties: { delayMs: { type: "integer", minimum: 0, maximum: 86_400_000 }, error: { type: "string", maxLength: 4096 } } },
      },
    },
    async (req, reply) => {
      const m = gw.take(req.params.receipt);
      const delayMs = req.body?.delayMs;
      const error = req.body?.error;
      // The error is kept with the dead letter when this was the message's last attempt.
      await m.nack(delayMs === undefined && error === undefined ? undefined : { ...(delayMs !== undefined ? { delayMs } : {}), ...(error !== undefined ? { error } : {}) });
      return reply.code(204).send();
    },
  );
}
