// POST /v2/sandboxes/:id/connect (SDK 2.50+), POST /sandboxes/:id/connect (2.6–2.49) and POST /sandboxes/:id/resume
// (2.0–2.5). Connecting to a running sandbox only ever extends its lifetime.
import type { FastifyInstance } from "fastify";
import { Code, ServerError } from "../../errors.js";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { toSandbox } from "./serialize.js";

const connectBody = {
  type: "object",
  properties: {
    timeout: { type: "integer", minimum: 0, description: "seconds; default 300; only extends" },
    memory: { type: "boolean" },
  },
} as const;

export function registerConnectRoutes(app: FastifyInstance, ctx: ApiContext): void {
  for (const url of ["/v2/sandboxes/:sandboxID/connect", "/sandboxes/:sandboxID/connect"]) {
    app.post<{ Params: { sandboxID: string }; Body: { timeout?: number } | undefined }>(
      url,
      {
        preValidation: strictJsonBody,
        schema: {
          summary: "Connect to a sandbox (200 when running)",
          params: sandboxIdParams,
          body: connectBody,
          response: { 200: { $ref: "Sandbox#" }, ...errorResponses(400, 401, 404, 501) },
        },
      },
      async (request) => toSandbox(ctx.sandboxes.connect(request.params.sandboxID, request.body?.timeout), ctx.config),
    );
  }

  app.post<{ Params: { sandboxID: string } }>(
    "/sandboxes/:sandboxID/resume",
    {
      schema: {
        summary: "Resume a paused sandbox (SDK 2.0–2.5); a running one answers 409",
        params: sandboxIdParams,
        response: errorResponses(401, 404, 409),
      },
    },
    async (request) => {
      const row = ctx.sandboxes.require(request.params.sandboxID);
      throw new ServerError(Code.AlreadyExists, `sandbox ${row.sandboxId} is already running`);
    },
  );
}
