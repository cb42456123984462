// GET /v2/sandboxes (paginated, filtered) and GET /sandboxes (v1: running sandboxes, plain array).
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.js";
import { errorResponses } from "../schemas.js";
import {
  afterCursor, decodeCursor, encodeCursor, matches, parseMetadataFilter, parseStartedAfter, parseStates, sortRows,
  type Order, type SandboxFilter,
} from "./list-filters.js";
import { toListedSandbox } from "./serialize.js";

export const LIST_LIMIT_MAX = 100;

interface ListQuery {
  metadata?: string;
  state?: string[];
  template?: string;
  startedAfter?: string;
  order?: Order;
  limit?: number;
  nextToken?: string;
  team?: string;
}

export function registerListRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /** Template ids and aliases equivalent to the `template` filter (an id or an alias). */
  const templateSet = (ref: string | undefined): Set<string> | undefined => {
    if (ref === undefined || ref === "") return undefined;
    const info = ctx.orchestrator.resolveTemplate(ref);
    return new Set(info ? [info.templateId, ...info.aliases] : [ref]);
  };

  app.get<{ Querystring: ListQuery }>(
    "/v2/sandboxes",
    {
      schema: {
        summary: "List sandboxes, newest first; paginate with the X-Next-Token response header",
        querystring: {
          type: "object",
          properties: {
            metadata: { type: "string", description: "url-encoded key=value pairs joined by &, encoded again" },
            // An array so that both `state=running,paused` and repeated `state=` parameters are accepted.
            state: { type: "array", items: { type: "string" } },
            template: { type: "string", description: "template id or alias" },
            startedAfter: { type: "string", description: "RFC 3339; inclusive" },
            order: { type: "string", enum: ["asc", "desc"], default: "desc" },
            limit: { type: "integer", minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_MAX },
            nextToken: { type: "string" },
            team: { type: "string", description: "Burrow: the instance admin lists another team's sandboxes (a team id) or every team's (all)" },
          },
        },
        response: { 200: { type: "array", items: { $ref: "ListedSandbox#" } }, ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const states = parseStates(q.state);
      const templates = templateSet(q.template);
      const startedAfter = parseStartedAfter(q.startedAfter);
      const filter: SandboxFilter = {
        metadata: parseMetadataFilter(q.metadata),
        ...(states ? { states } : {}),
        ...(templates ? { templates } : {}),
        ...(startedAfter ? { startedAfter } : {}),
      };
      const order = q.order ?? "desc";
      const limit = q.limit ?? LIST_LIMIT_MAX;
      const matching = sortRows(ctx.teams.visibleSandboxes(request.caller, ctx.sandboxes.list(), q.team).filter((row) => matches(row, filter)), order);
      const remaining = q.nextToken ? afterCursor(matching, decodeCursor(q.nextToken), order) : matching;
      const page = remaining.slice(0, limit);
      if (remaining.length > limit) reply.header("X-Next-Token", encodeCursor(page[page.length - 1]!));
      // Infra sends the count (after filters, before pagination) only when running sandboxes were asked for.
      if (!states || states.includes("running")) {
        reply.header("X-Total-Running", String(matching.filter((row) => row.state === "running").length));
      }
      return page.map(toListedSandbox);
    },
  );

  app.get<{ Querystring: { metadata?: string; team?: string } }>(
    "/sandboxes",
    {
      schema: {
        summary: "List running sandboxes (v1; no pagination)",
        querystring: { type: "object", properties: { metadata: { type: "string" }, team: { type: "string" } } },
        response: { 200: { type: "array", items: { $ref: "ListedSandbox#" } }, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const filter: SandboxFilter = { metadata: parseMetadataFilter(request.query.metadata), states: ["running"] };
      return sortRows(ctx.teams.visibleSandboxes(request.caller, ctx.sandboxes.list(), request.query.team).filter((row) => matches(row, filter)), "desc").map(toListedSandbox);
    },
  );
}
