import type { FastifyInstance, FastifyRequest } from "fastify";
import { LivenessMonitor, sendHeartbeat, type Bus, type KeyRegistry } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";

const agentParams = { type: "object", required: ["agentId"], properties: { agentId: { type: "string", pattern: "^[A-Za-z0-9_-]{1,128}$" } } } as const;

export function registerAgentRoutes(
  app: FastifyInstance,
  bus: Bus,
  registry: () => Promise<KeyRegistry>,
  monitor: () => Promise<LivenessMonitor>,
  prefix: string,
  auth: (r: FastifyRequest) => Promise<void>,
): void {
  app.post<{ Params: { agentId: string }; Body: { publicKey: string } }>(`${prefix}/agents/:agentId/keys`, {
    onRequest: auth,
    schema: { params: agentParams, body: { type: "object", required: ["publicKey"], additionalProperties: false, properties: { publicKey: { type: "string", maxLength: 128 } } } },
  }, async (req, reply) => {
    const raw = new Uint8Array(Buffer.from(req.body.publicKey, "base64"));
    if (raw.length !== 32) throw new BurrowError(Code.InvalidArgument, "publicKey must be a base64 raw Ed25519 key (32 bytes)");
    const k = await (await registry()).register(req.params.agentId, raw);
    return reply.code(201).send({ agentId: k.agentId, keyId: k.keyId });
  });

  app.delete<{ Params: { agentId: string; keyId: string } }>(`${prefix}/agents/:agentId/keys/:keyId`, {
    onRequest: auth,
    schema: { params: { type: "object", required: ["agentId", "keyId"], properties: { agentId: agentParams.properties.agentId, keyId: { type: "string", pattern: "^[0-9a-f]{16}$" } } } },
  }, async (req, reply) => {
    await (await registry()).revoke(req.params.agentId, req.params.keyId);
    return reply.code(204).send();
  });

  app.post<{ Params: { agentId: string }; Body: { group?: string; meta?: Record<string, string> } | undefined }>(`${prefix}/agents/:agentId/heartbeat`, {
    onRequest: auth,
    schema: {
      params: agentParams,
      body: { type: "object", nullable: true, additionalProperties: false, properties: { group: { type: "string", maxLength: 128 }, meta: { type: "object", additionalProperties: { type: "string" } } } },
    },
  }, async (req, reply) => {
    const b = req.body ?? {};
    await sendHeartbeat(bus, { agentId: req.params.agentId, ...(b.group ? { group: b.group } : {}), ...(b.meta ? { meta: b.meta } : {}) });
    return reply.code(204).send();
  });

  app.get<{ Params: { agentId: string } }>(`${prefix}/agents/:agentId`, { onRequest: auth, schema: { params: agentParams } }, async (req) => {
    const m = await monitor();
    await m.poll();
    const s = m.status(req.params.agentId);
    if (!s) throw new BurrowError(Code.NotFound, `agent ${req.params.agentId} has never sent a heartbeat`);
    return s;
  });

  app.get(`${prefix}/agents`, { onRequest: auth }, async () => {
    const m = await monitor();
    await m.poll();
    return m.agents();
  });
}
