// GET /burrow/v1/sandboxes/{id}/egress?limit=: what a sandbox's egress proxy carried or refused and which names its
// resolver refused, newest last (the orchestrator keeps the newest 1000 per sandbox in memory while it runs).
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../api/context.js";
import { errorResponses, sandboxIdParams } from "../api/schemas.js";

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

export function registerEgressRoutes(app: FastifyInstance, ctx: ApiContext, prefix = "/burrow/v1"): void {
  app.get<{ Params: { sandboxID: string }; Querystring: { limit?: number } }>(
    `${prefix}/sandboxes/:sandboxID/egress`,
    {
      schema: {
        summary: "A sandbox's egress audit: connections through the egress proxy and names its resolver refused",
        params: sandboxIdParams,
        querystring: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: MAX_LIMIT } }, additionalProperties: false },
        response: errorResponses(400, 401, 404, 501),
      },
    },
    async (request) => {
      const { sandboxID } = request.params;
      ctx.sandboxes.require(sandboxID);
      if (!ctx.orchestrator.egressLog) {
        throw new BurrowError(Code.Unimplemented, "this orchestrator keeps no egress audit", { reason: "egress_audit_unsupported" });
      }
      return { sandboxID, events: ctx.orchestrator.egressLog(sandboxID, request.query.limit ?? DEFAULT_LIMIT) };
    },
  );
}
