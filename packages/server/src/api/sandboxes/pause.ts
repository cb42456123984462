// POST /sandboxes/:sandboxID/pause — pause with memory kept (E2B `pause`/`betaPause`), or filesystem-only with
// `{"memory": false}` (the SDK's `keepMemory: false`: processes end, files stay, resume cold-boots it). 204; 409 when
// already paused (the SDK then returns false); 404 when unknown.
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";

const pauseBody = {
  type: "object",
  properties: { memory: { type: "boolean", description: "keep memory (default true); false pauses filesystem-only and resume reboots" } },
} as const;

export function registerPauseRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { sandboxID: string }; Body: { memory?: boolean } | undefined }>(
    "/sandboxes/:sandboxID/pause",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Pause a sandbox (memory kept, or filesystem-only); connect resumes it",
        params: sandboxIdParams,
        body: pauseBody,
        response: { 204: { type: "null" }, ...errorResponses(400, 401, 404, 409, 501) },
      },
    },
    async (request, reply) => {
      await ctx.sandboxes.pause(request.params.sandboxID, { memory: request.body?.memory });
      return reply.code(204).send();
    },
  );
}
