// Routes of one checkpoint, by id (they work after its sandbox has ended): read it, branch from it, delete it.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ApiContext } from "../context.js";
import { toSandbox } from "../sandboxes/serialize.js";
import { errorResponses } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { MAX_BRANCH_COUNT, type CheckpointService } from "./checkpoint-service.js";
import { checkpointSchema, toCheckpoint } from "./serialize.js";

const checkpointIdParams = {
  type: "object",
  required: ["checkpointID"],
  properties: { checkpointID: { type: "string" } },
} as const;

const branchBody = {
  type: "object",
  required: ["count"],
  properties: {
    count: { type: "integer", minimum: 1, maximum: MAX_BRANCH_COUNT, description: "number of sandboxes to start" },
    timeout: { type: "integer", minimum: 0, description: "lifetime of each in seconds; server default when absent" },
  },
} as const;

/** Aborts when the client disconnects before the response is written. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

export function registerCheckpointRoutes(app: FastifyInstance, ctx: ApiContext, service: CheckpointService, prefix: string): void {
  app.get<{ Params: { checkpointID: string } }>(
    `${prefix}/checkpoints/:checkpointID`,
    {
      schema: {
        summary: "One checkpoint (files only; also after its sandbox has ended)",
        params: checkpointIdParams,
        response: { 200: checkpointSchema, ...errorResponses(401, 404, 500, 501) },
      },
    },
    async (request) => toCheckpoint(await service.get(request.params.checkpointID)),
  );

  app.post<{ Params: { checkpointID: string }; Body: { count: number; timeout?: number } }>(
    `${prefix}/checkpoints/:checkpointID/branch`,
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Start sandboxes from a checkpoint's files (fresh processes); each succeeds or fails on its own",
        params: checkpointIdParams,
        body: branchBody,
        response: {
          201: {
            type: "array",
            items: { type: "object", properties: { sandbox: { $ref: "Sandbox#" }, error: { $ref: "Error#" } } },
          },
          ...errorResponses(400, 401, 404, 500, 501),
        },
      },
    },
    async (request, reply) => {
      const outcomes = await service.branch(request.params.checkpointID, {
        count: request.body.count,
        ...(request.body.timeout !== undefined ? { timeoutSec: request.body.timeout } : {}),
        apiKeyId: request.apiKeyId ?? null,
        signal: clientGoneSignal(reply),
      });
      return reply.code(201).send(outcomes.map((o) => (o.row ? { sandbox: toSandbox(o.row, ctx.config, ctx.networks.get(o.row.sandboxId)) } : { error: o.error })));
    },
  );

  app.delete<{ Params: { checkpointID: string }; Querystring: { cascade?: boolean } }>(
    `${prefix}/checkpoints/:checkpointID`,
    {
      schema: {
        summary: "Delete a checkpoint (409 while checkpoints descend from it, unless cascade=true deletes them too)",
        params: checkpointIdParams,
        querystring: { type: "object", additionalProperties: false, properties: { cascade: { type: "boolean", default: false } } },
        response: {
          200: { type: "object", required: ["deleted"], properties: { deleted: { type: "array", items: { type: "string" } } } },
          ...errorResponses(400, 401, 404, 409, 500, 501),
        },
      },
    },
    async (request) => ({ deleted: await service.delete(request.params.checkpointID, request.query.cascade === true) }),
  );
}
