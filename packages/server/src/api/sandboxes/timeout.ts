// POST /sandboxes/:sandboxID/timeout — endAt = now + timeout (may shorten the lifetime).
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";

export function registerTimeoutRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { sandboxID: string }; Body: { timeout: number } }>(
    "/sandboxes/:sandboxID/timeout",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Set a sandbox's remaining lifetime",
        params: sandboxIdParams,
        body: {
          type: "object",
          required: ["timeout"],
          properties: { timeout: { type: "integer", minimum: 0, description: "seconds from now" } },
        },
        response: { 204: { type: "null" }, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      ctx.sandboxes.setTimeout(request.params.sandboxID, request.body.timeout);
      return reply.code(204).send();
    },
  );
}
