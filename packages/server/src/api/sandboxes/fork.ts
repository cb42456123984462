// POST /sandboxes/:sandboxID/fork (E2B `fork`): snapshot the sandbox's files once and start `count` sandboxes from
// them. 201 with one SandboxForkResult per fork, `{sandbox}` or `{error: {code, message}}`; 404 for an unknown
// sandbox. Only files are copied: running processes and memory are not (CRIU does not work on these kernels), so
// forks start fresh processes. The source keeps running (it is frozen while its files are copied). Forks are new
// sandboxes to admission (all of them or none: 429/507), and their snapshot is charged to the source's owner.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { toSandbox } from "./serialize.js";

const MAX_FORKS = 20;

const forkBody = {
  type: "object",
  properties: {
    timeout: { type: "integer", minimum: 0, description: "lifetime of each fork in seconds; server default when absent" },
    count: { type: "integer", minimum: 1, maximum: MAX_FORKS, description: "number of forks (default 1)" },
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

export function registerForkRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { sandboxID: string }; Body: { timeout?: number; count?: number } | undefined }>(
    "/sandboxes/:sandboxID/fork",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Fork a sandbox: start sandboxes from a snapshot of its files (processes are not copied)",
        params: sandboxIdParams,
        body: forkBody,
        response: {
          201: {
            type: "array",
            items: {
              type: "object",
              properties: {
                sandbox: { $ref: "Sandbox#" },
                error: { $ref: "Error#" },
              },
            },
          },
          ...errorResponses(400, 401, 404, 429, 500, 501, 507),
        },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const outcomes = await ctx.sandboxes.fork(request.params.sandboxID, {
        ...(body.timeout !== undefined ? { timeoutSec: body.timeout } : {}),
        ...(body.count !== undefined ? { count: body.count } : {}),
        apiKeyId: request.apiKeyId,
        signal: clientGoneSignal(reply),
      });
      return reply
        .code(201)
        .send(outcomes.map((o) => (o.row ? { sandbox: toSandbox(o.row, ctx.config, ctx.networks.get(o.row.sandboxId)) } : { error: o.error })));
    },
  );
}
