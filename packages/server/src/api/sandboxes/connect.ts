// POST /v2/sandboxes/:id/connect (SDK 2.50+), POST /sandboxes/:id/connect (2.6–2.49) and POST /sandboxes/:id/resume
// (2.0–2.5). Connecting to a running sandbox only ever extends its lifetime (200); connecting to a paused one resumes
// it with the requested timeout (201).
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { toSandbox } from "./serialize.js";

const connectBody = {
  type: "object",
  properties: {
    timeout: { type: "integer", minimum: 0, description: "seconds; default 300; only extends" },
    memory: { type: "boolean", description: "false: a paused sandbox is resumed by a cold boot even when its memory was kept" },
  },
} as const;

/** Legacy ResumedSandbox body: `timeout` (seconds, default 300) and `autoPause` (ignored). */
const resumeBody = {
  type: "object",
  properties: {
    timeout: { type: "integer", minimum: 0, description: "seconds; default 300" },
    autoPause: { type: "boolean" },
  },
} as const;

export function registerConnectRoutes(app: FastifyInstance, ctx: ApiContext): void {
  for (const url of ["/v2/sandboxes/:sandboxID/connect", "/sandboxes/:sandboxID/connect"]) {
    app.post<{ Params: { sandboxID: string }; Body: { timeout?: number; memory?: boolean } | undefined }>(
      url,
      {
        preValidation: strictJsonBody,
        schema: {
          summary: "Connect to a sandbox (200 when running, 201 when it was paused and got resumed)",
          params: sandboxIdParams,
          body: connectBody,
          response: { 200: { $ref: "Sandbox#" }, 201: { $ref: "Sandbox#" }, ...errorResponses(400, 401, 404, 501, 507) },
        },
      },
      async (request, reply) => {
        const { row, resumed } = await ctx.sandboxes.connect(request.params.sandboxID, request.body?.timeout, { memory: request.body?.memory });
        return reply.code(resumed ? 201 : 200).send(toSandbox(row, ctx.config, ctx.networks.get(row.sandboxId)));
      },
    );
  }

  app.post<{ Params: { sandboxID: string }; Body: { timeout?: number } | undefined }>(
    "/sandboxes/:sandboxID/resume",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Resume a paused sandbox (SDK 2.0–2.5); a running one answers 409",
        params: sandboxIdParams,
        body: resumeBody,
        response: { 201: { $ref: "Sandbox#" }, ...errorResponses(400, 401, 404, 409, 501, 507) },
      },
    },
    async (request, reply) => {
      const row = ctx.sandboxes.require(request.params.sandboxID);
      if (row.state === "running") throw new BurrowError(Code.AlreadyExists, `sandbox ${row.sandboxId} is already running`);
      const result = await ctx.sandboxes.connect(row.sandboxId, request.body?.timeout);
      return reply.code(201).send(toSandbox(result.row, ctx.config, ctx.networks.get(result.row.sandboxId)));
    },
  );
}
