// GET /sandboxes/metrics?sandbox_ids=a,b — the latest sample of each of several sandboxes, as E2B's dashboard asks.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../context.js";
import { errorResponses } from "../schemas.js";
import { toSandboxMetric } from "./serialize.js";

/** E2B's maxItems for `sandbox_ids`. */
export const METRICS_BATCH_MAX = 100;

/**
 * The ids of `sandbox_ids` (style form, explode false: one comma-separated value; repeated parameters are joined
 * too, as lenient clients send them), each cut to its short form like E2B's ShortID (`<id>-<clientID>` → `<id>`).
 */
export function parseSandboxIds(raw: string | string[]): string[] {
  const ids = (Array.isArray(raw) ? raw : [raw])
    .flatMap((v) => v.split(","))
    .map((id) => id.trim().split("-")[0]!)
    .filter((id) => id !== "");
  if (ids.length > METRICS_BATCH_MAX) {
    throw new BurrowError(Code.InvalidArgument, `Too many sandboxes requested, maximum is ${METRICS_BATCH_MAX}`);
  }
  // The spec says uniqueItems: its request validator refuses a repeated id rather than answering it once.
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup !== undefined) throw new BurrowError(Code.InvalidArgument, `sandbox_ids: duplicate sandbox id "${dup}"`);
  return ids;
}

export function registerMetricsBatchRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: { sandbox_ids: string | string[] } }>(
    "/sandboxes/metrics",
    {
      schema: {
        summary: "The latest resource sample of each listed sandbox of the caller's team, by sandbox id",
        querystring: {
          type: "object",
          required: ["sandbox_ids"],
          properties: {
            sandbox_ids: {
              anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }],
              description: `comma-separated sandbox ids, at most ${METRICS_BATCH_MAX}`,
            },
          },
        },
        response: {
          200: {
            type: "object",
            required: ["sandboxes"],
            properties: { sandboxes: { type: "object", additionalProperties: { $ref: "SandboxMetric#" } } },
          },
          ...errorResponses(400, 401),
        },
      },
    },
    async (request) => {
      const ids = parseSandboxIds(request.query.sandbox_ids);
      // E2B reads metrics by team: another team's sandbox and an unknown id are left out, not an error.
      const wanted = new Set(ids);
      const rows = ctx.teams.visibleSandboxes(request.caller, ctx.sandboxes.list()).filter((r) => wanted.has(r.sandboxId));
      const latest = await Promise.all(rows.map(async (r) => [r.sandboxId, (await ctx.sandboxMetrics.samples(r.sandboxId)).at(-1)] as const));
      const sandboxes: Record<string, ReturnType<typeof toSandboxMetric>> = {};
      // A sandbox without a sample yet (none taken, or paused before its first) is left out, as E2B does.
      for (const [id, sample] of latest) if (sample) sandboxes[id] = toSandboxMetric(sample);
      return { sandboxes };
    },
  );
}
