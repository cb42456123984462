// /burrow/v1/alerts: webhooks for alerts (POST, GET, DELETE /:id) and the delivery log (GET /deliveries). A team's
// key sees and changes its team's webhooks; the instance admin's sees all. Secrets are write-only: answers never
// carry them. A webhook chooses its kinds (all by default) and, for dead_letters, how much a queue's count must grow
// before it hears of it (deadLetterThreshold, default 1). Payloads are signed (Burrow-Signature, see alert-signature.ts).
import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { ALERT_KINDS, type AlertKind } from "./alert-kinds.js";
import type { AlertService } from "./alert-service.js";
import type { Webhook } from "./webhook-store.js";

const BASE = "/burrow/v1/alerts";

const view = (h: Webhook) => ({ id: h.id, url: h.url, kinds: h.kinds, ...(h.deadLetterThreshold !== undefined ? { deadLetterThreshold: h.deadLetterThreshold } : {}), createdAt: h.createdAt });

/** The one team lookup of these routes: undefined for the instance admin (or a server without teams). */
function teamOf(request: FastifyRequest): string | undefined {
  const caller = request.caller;
  return caller && !caller.instanceAdmin ? caller.teamId : undefined;
}

export function registerAlertRoutes(app: FastifyInstance, alerts: AlertService): void {
  app.post<{ Body: { url: string; kinds?: AlertKind[]; secret?: string; deadLetterThreshold?: number } }>(
    BASE,
    {
      schema: {
        summary: "Add an alert webhook; the answer carries its signing secret (once)",
        body: {
          type: "object",
          required: ["url"],
          additionalProperties: false,
          properties: {
            url: { type: "string", minLength: 1, maxLength: 2048 },
            kinds: { type: "array", items: { type: "string", enum: [...ALERT_KINDS] }, uniqueItems: true, minItems: 1 },
            secret: { type: "string", minLength: 16, maxLength: 256 },
            deadLetterThreshold: { type: "integer", minimum: 1, maximum: 1_000_000 },
          },
        },
      },
    },
    async (request, reply) => {
      let url: URL;
      try {
        url = new URL(request.body.url);
      } catch {
        throw new BurrowError(Code.InvalidArgument, `url must be an http(s) URL, got "${request.body.url}"`);
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new BurrowError(Code.InvalidArgument, `url must be an http(s) URL, got "${request.body.url}"`);
      const secret = request.body.secret ?? randomBytes(32).toString("hex");
      const { deadLetterThreshold } = request.body;
      const hook = alerts.webhooks.add({
        url: url.toString(),
        kinds: request.body.kinds ?? [...ALERT_KINDS],
        secret,
        teamId: teamOf(request) ?? null,
        ...(deadLetterThreshold !== undefined ? { deadLetterThreshold } : {}),
      });
      return reply.code(201).send({ ...view(hook), secret });
    },
  );

  app.get(BASE, { schema: { summary: "Alert webhooks (secrets are not shown)" } }, async (request) => {
    const team = teamOf(request);
    return alerts.webhooks.list().filter((h) => team === undefined || h.teamId === team).map(view);
  });

  app.delete<{ Params: { webhookId: string } }>(`${BASE}/:webhookId`, { schema: { summary: "Remove an alert webhook" } }, async (request, reply) => {
    const team = teamOf(request);
    const hook = alerts.webhooks.list().find((h) => h.id === request.params.webhookId && (team === undefined || h.teamId === team));
    if (!hook || !alerts.webhooks.remove(hook.id)) throw new BurrowError(Code.NotFound, `alert webhook "${request.params.webhookId}" not found`);
    alerts.forgetWebhook(hook.id);
    return reply.code(204).send();
  });

  app.get<{ Querystring: { limit: number } }>(
    `${BASE}/deliveries`,
    {
      schema: {
        summary: "Alert deliveries, newest first, with each attempt",
        querystring: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 1000, default: 100 } } },
      },
    },
    async (request) => alerts.deliveries(teamOf(request), request.query.limit),
  );
}
