// E2B's sandbox logs: GET /sandboxes/:sandboxID/logs (v1, deprecated: `start`, `limit`; answers `logs` and
// `logEntries`) and GET /v2/sandboxes/:sandboxID/logs (`cursor`, `limit`, `direction`, `level`, `search`; answers
// `logs` as structured entries). The shapes and parameters follow E2B's OpenAPI spec; the entries are the
// sandbox's envd log with its processes' output (see logs/sandbox-logs.ts). An ended sandbox's logs stay readable
// for the configured retention.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxLogEntry } from "../../logs/log-entry.js";
import type { SandboxLogs } from "../../logs/sandbox-logs.js";
import { DEFAULT_LOG_LIMIT, queryLog, type LogQuery } from "../../logs/log-query.js";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";

const entrySchema = {
  type: "object",
  required: ["timestamp", "level", "message", "fields"],
  properties: {
    timestamp: { type: "string", format: "date-time" },
    level: { type: "string", enum: ["debug", "info", "warn", "error"] },
    message: { type: "string" },
    fields: { type: "object", additionalProperties: { type: "string" } },
  },
} as const;

const lineSchema = {
  type: "object",
  required: ["timestamp", "line"],
  properties: { timestamp: { type: "string", format: "date-time" }, line: { type: "string" } },
} as const;

const limitSchema = { type: "integer", minimum: 0, default: DEFAULT_LOG_LIMIT } as const;

const toEntry = (e: SandboxLogEntry) => ({ timestamp: e.timestamp.toISOString(), level: e.level, message: e.message, fields: e.fields });

/**
 * The one lookup of a sandbox's logs: a sandbox the caller may see (running or paused), else an ended one whose logs
 * are still kept; 404 otherwise.
 */
export async function findSandboxLog(
  ctx: ApiContext,
  logs: SandboxLogs | undefined,
  request: FastifyRequest,
  sandboxId: string,
): Promise<SandboxLogEntry[]> {
  // A live sandbox passed the team check of the access hooks; an ended one is checked against its recorded team.
  const live = ctx.sandboxes.get(sandboxId) !== undefined;
  const team = request.caller && !request.caller.instanceAdmin ? request.caller.teamId : undefined;
  const entries = await logs?.entries(sandboxId, { live, team });
  if (entries) return entries;
  if (live) throw new BurrowError(Code.Unimplemented, "sandbox logs are not supported by this orchestrator");
  ctx.sandboxes.require(sandboxId);
  throw new BurrowError(Code.NotFound, `sandbox ${sandboxId} not found`);
}

export function registerLogRoutes(app: FastifyInstance, ctx: ApiContext, logs: SandboxLogs | undefined): void {
  app.get<{ Params: { sandboxID: string }; Querystring: { start?: number; limit: number } }>(
    "/sandboxes/:sandboxID/logs",
    {
      schema: {
        summary: "Sandbox logs (deprecated: use /v2/sandboxes/{sandboxID}/logs)",
        params: sandboxIdParams,
        querystring: {
          type: "object",
          properties: { start: { type: "integer", minimum: 0, description: "ms since the epoch" }, limit: limitSchema },
        },
        response: {
          200: {
            type: "object",
            required: ["logs", "logEntries"],
            properties: { logs: { type: "array", items: lineSchema }, logEntries: { type: "array", items: entrySchema } },
          },
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (request) => {
      const entries = await findSandboxLog(ctx, logs, request, request.params.sandboxID);
      const found = queryLog(entries, { cursor: request.query.start, direction: "forward", limit: request.query.limit });
      return {
        logs: found.map((e) => ({ timestamp: e.timestamp.toISOString(), line: e.message })),
        logEntries: found.map(toEntry),
      };
    },
  );

  app.get<{ Params: { sandboxID: string }; Querystring: Omit<LogQuery, "direction"> & { direction?: LogQuery["direction"] } }>(
    "/v2/sandboxes/:sandboxID/logs",
    {
      schema: {
        summary: "Sandbox logs",
        params: sandboxIdParams,
        querystring: {
          type: "object",
          properties: {
            cursor: { type: "integer", minimum: 0, description: "ms since the epoch: where the window starts (forward) or ends (backward)" },
            limit: { ...limitSchema, maximum: 1000 },
            direction: { type: "string", enum: ["forward", "backward"] },
            level: { type: "string", enum: ["debug", "info", "warn", "error"], description: "minimum level" },
            search: { type: "string", maxLength: 256, description: "case-sensitive substring of the message" },
          },
        },
        response: {
          200: { type: "object", required: ["logs"], properties: { logs: { type: "array", items: entrySchema } } },
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (request) => {
      const entries = await findSandboxLog(ctx, logs, request, request.params.sandboxID);
      const { direction = "backward", ...rest } = request.query;
      return { logs: queryLog(entries, { ...rest, direction }).map(toEntry) };
    },
  );
}
