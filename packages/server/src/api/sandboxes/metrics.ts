// GET /sandboxes/:sandboxID/metrics?start=&end= — resource samples (unix-second bounds, inclusive); the batched
// GET /sandboxes/metrics (metrics-batch.ts) is registered with it.
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { registerMetricsBatchRoute } from "./metrics-batch.js";
import { toSandboxMetric } from "./serialize.js";

export function registerMetricsRoute(app: FastifyInstance, ctx: ApiContext): void {
  registerMetricsBatchRoute(app, ctx);
  app.get<{ Params: { sandboxID: string }; Querystring: { start?: number; end?: number } }>(
    "/sandboxes/:sandboxID/metrics",
    {
      schema: {
        summary: "Resource usage samples of a sandbox, oldest first",
        params: sandboxIdParams,
        querystring: {
          type: "object",
          properties: { start: { type: "integer", description: "unix seconds" }, end: { type: "integer", description: "unix seconds" } },
        },
        response: { 200: { type: "array", items: { $ref: "SandboxMetric#" } }, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => {
      const { sandboxId } = ctx.sandboxes.require(request.params.sandboxID);
      const { start, end } = request.query;
      const samples = await ctx.sandboxMetrics.samples(sandboxId, {
        ...(start !== undefined ? { start: new Date(start * 1000) } : {}),
        // `end` is a whole second: include samples taken during it.
        ...(end !== undefined ? { end: new Date(end * 1000 + 999) } : {}),
      });
      return samples.map(toSandboxMetric);
    },
  );
}
