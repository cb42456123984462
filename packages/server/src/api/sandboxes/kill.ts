// DELETE /sandboxes/:sandboxID — kill. 404 (with `code: 404` in the body: the SDK returns false on it) when unknown.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";

export function registerKillRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.delete<{ Params: { sandboxID: string } }>(
    "/sandboxes/:sandboxID",
    {
      schema: {
        summary: "Kill a sandbox",
        params: sandboxIdParams,
        response: { 204: { type: "null" }, ...errorResponses(401, 404) },
      },
    },
    async (request, reply) => {
      const id = request.params.sandboxID;
      if (!(await ctx.sandboxes.kill(id, "api"))) {
        throw new BurrowError(Code.NotFound, `sandbox "${id}" doesn't exist or you don't have access to it`);
      }
      return reply.code(204).send();
    },
  );
}
