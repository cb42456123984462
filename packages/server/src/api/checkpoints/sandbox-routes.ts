// Checkpoint routes of one sandbox: take a checkpoint, list its tree, roll it back.
import type { FastifyInstance } from "fastify";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import type { CheckpointService } from "./checkpoint-service.js";
import { checkpointSchema, checkpointTreeSchema, toCheckpoint, toCheckpointTree } from "./serialize.js";

const MAX_LABEL = 256;

const createBody = {
  type: "object",
  properties: { label: { type: "string", maxLength: MAX_LABEL, description: "a name for the checkpoint, kept with it" } },
} as const;

const rollbackBody = {
  type: "object",
  required: ["checkpointID"],
  properties: { checkpointID: { type: "string", minLength: 1, description: "a checkpoint of the sandbox's tree" } },
} as const;

export function registerSandboxCheckpointRoutes(app: FastifyInstance, service: CheckpointService, prefix: string): void {
  app.post<{ Params: { sandboxID: string }; Body: { label?: string } | undefined }>(
    `${prefix}/sandboxes/:sandboxID/checkpoints`,
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Checkpoint a sandbox's files (copy-on-write; processes and memory are not kept)",
        params: sandboxIdParams,
        body: createBody,
        response: { 201: checkpointSchema, ...errorResponses(400, 401, 404, 429, 500, 501, 507) },
      },
    },
    async (request, reply) => {
      const info = await service.create(request.params.sandboxID, request.body?.label);
      return reply.code(201).send(toCheckpoint(info));
    },
  );

  app.get<{ Params: { sandboxID: string } }>(
    `${prefix}/sandboxes/:sandboxID/checkpoints`,
    {
      schema: {
        summary: "The checkpoint tree of a sandbox, and which checkpoint its current files descend from",
        params: sandboxIdParams,
        response: { 200: checkpointTreeSchema, ...errorResponses(401, 404, 500, 501) },
      },
    },
    async (request) => toCheckpointTree(await service.tree(request.params.sandboxID)),
  );

  app.post<{ Params: { sandboxID: string }; Body: { checkpointID: string } }>(
    `${prefix}/sandboxes/:sandboxID/rollback`,
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Restore a sandbox in place to a checkpoint: same id, token and address; its processes restart",
        params: sandboxIdParams,
        body: rollbackBody,
        response: {
          200: {
            type: "object",
            required: ["sandboxID", "checkpointID"],
            properties: { sandboxID: { type: "string" }, checkpointID: { type: "string" } },
          },
          ...errorResponses(400, 401, 404, 409, 500, 501),
        },
      },
    },
    async (request) => {
      const row = await service.rollback(request.params.sandboxID, request.body.checkpointID);
      return { sandboxID: row.sandboxId, checkpointID: request.body.checkpointID };
    },
  );
}
