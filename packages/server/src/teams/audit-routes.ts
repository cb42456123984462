// GET /burrow/v1/audit?limit&since: the audit log, newest first; a team's keys see their team's entries, the
// instance admin every team's (or one, with teamID).
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { toWire } from "./audit-log.js";
import type { TeamServices } from "./team-services.js";

export function registerAuditRoutes(app: FastifyInstance, t: TeamServices): void {
  app.get<{ Querystring: { limit?: number; since?: string; teamID?: string } }>(
    "/burrow/v1/audit",
    {
      schema: {
        querystring: {
          type: "object",
          additionalProperties: false,
          properties: {
            limit: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
            since: { type: "string", description: "RFC 3339 or unix milliseconds; entries at or after it" },
            teamID: { type: "string" },
          },
        },
      },
    },
    async (request) => {
      const c = request.caller;
      if (!c) throw new BurrowError(Code.Unauthenticated, "missing API key");
      const { limit, since, teamID } = request.query;
      let sinceDate: Date | undefined;
      if (since !== undefined) {
        sinceDate = /^\d+$/.test(since) ? new Date(Number(since)) : new Date(since);
        if (Number.isNaN(sinceDate.getTime())) throw new BurrowError(Code.InvalidArgument, `since must be RFC 3339 or unix milliseconds, got "${since}"`);
      }
      const teamId = c.instanceAdmin ? teamID : c.teamId;
      return t.audit.query({ teamId, limit, since: sinceDate }).map(toWire);
    },
  );
}
