// Teams: E2B's `GET /teams` and `GET /teams/{teamID}/metrics`, and Burrow's own team management under
// /burrow/v1/teams (E2B has no API to create teams): the instance admin creates teams (each with a first admin
// key, shown once), sets their quotas and deletes them (team-delete.ts).
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { generateApiKey } from "../auth/ensure-api-key.js";
import { requireInstanceAdmin, type Caller } from "./caller.js";
import type { TeamServices } from "./team-services.js";
import { parseQuotaPatch } from "./team-quotas.js";
import { toCreatedKey } from "./api-key-routes.js";
import { deleteTeam, type TeamResources } from "./team-delete.js";

const teamIdParams = { type: "object", required: ["teamID"], properties: { teamID: { type: "string", minLength: 1, maxLength: 64 } } } as const;
const NAME = { type: "string", minLength: 1, maxLength: 128, pattern: "^[^\\u0000-\\u001f]+$" } as const;

function caller(request: { caller: Caller | null }): Caller {
  if (!request.caller) throw new BurrowError(Code.Unauthenticated, "missing API key");
  return request.caller;
}

export function registerTeamRoutes(app: FastifyInstance, t: TeamServices, resources: TeamResources): void {
  const teamView = (c: Caller, teamId: string) => {
    const team = t.store.team(teamId)!;
    return {
      teamID: team.teamId,
      name: team.name,
      // Keys are stored hashed: the only plaintext the server can show is the one the caller sent.
      apiKey: c.teamId === team.teamId ? c.presentedKey : "",
      isDefault: c.teamId === team.teamId,
    };
  };
  const burrowView = (teamId: string) => {
    const team = t.store.team(teamId)!;
    return {
      teamID: team.teamId,
      name: team.name,
      createdAt: team.createdAt.toISOString(),
      quotas: t.quotas.effective(team.teamId),
      quotaOverrides: team.quotas,
      usage: { ...t.quotas.usage(team.teamId), startsLastMinute: t.quotas.startRate(team.teamId) },
    };
  };
  /** A team the caller may look at: its own, or any for the instance admin; others are 404. */
  const visibleTeam = (c: Caller, teamId: string) => {
    if (!t.store.team(teamId) || (!c.instanceAdmin && c.teamId !== teamId)) throw new BurrowError(Code.NotFound, `team "${teamId}" not found`);
  };

  app.get("/teams", async (request) => {
    const c = caller(request);
    const teams = c.instanceAdmin ? t.store.teams() : [t.store.team(c.teamId)!];
    return teams.map((team) => teamView(c, team.teamId));
  });

  app.get<{ Params: { teamID: string }; Querystring: { start?: number; end?: number } }>(
    "/teams/:teamID/metrics",
    {
      schema: {
        params: teamIdParams,
        querystring: { type: "object", properties: { start: { type: "integer", minimum: 0 }, end: { type: "integer", minimum: 0 } } },
      },
    },
    async (request) => {
      const c = caller(request);
      visibleTeam(c, request.params.teamID);
      const now = Math.floor(Date.now() / 1000);
      const end = request.query.end ?? now;
      const start = request.query.start ?? end - 3600;
      if (start > end) throw new BurrowError(Code.InvalidArgument, "start must not be after end");
      return t.metrics.query(request.params.teamID, start, end).map((s) => ({
        timestamp: new Date(s.timestampUnix * 1000).toISOString(),
        timestampUnix: s.timestampUnix,
        concurrentSandboxes: s.concurrentSandboxes,
        sandboxStartRate: s.sandboxStartRate,
      }));
    },
  );

  app.get("/burrow/v1/teams", async (request) => {
    const c = caller(request);
    return (c.instanceAdmin ? t.store.teams() : [t.store.team(c.teamId)!]).map((team) => burrowView(team.teamId));
  });

  app.get<{ Params: { teamID: string } }>("/burrow/v1/teams/:teamID", { schema: { params: teamIdParams } }, async (request) => {
    visibleTeam(caller(request), request.params.teamID);
    return burrowView(request.params.teamID);
  });

  app.post<{ Body: { name: string; keyName?: string } }>(
    "/burrow/v1/teams",
    {
      schema: {
        body: { type: "object", required: ["name"], additionalProperties: false, properties: { name: NAME, keyName: NAME } },
      },
    },
    async (request, reply) => {
      const c = requireInstanceAdmin(request.caller, "creating teams");
      const team = t.store.createTeam(request.body.name);
      const key = generateApiKey();
      const info = t.store.addKey(key, { teamId: team.teamId, name: request.body.keyName ?? `${team.name} admin`, role: "admin" });
      t.audit.record({ teamId: team.teamId, keyId: c.keyPublicId, action: "create", resourceKind: "team", resourceId: team.teamId, detail: { name: team.name } });
      return reply.code(201).send({ ...burrowView(team.teamId), adminKey: toCreatedKey(info, key) });
    },
  );

  app.patch<{ Params: { teamID: string }; Body: { name?: string; quotas?: Record<string, unknown> } }>(
    "/burrow/v1/teams/:teamID",
    {
      schema: {
        params: teamIdParams,
        body: { type: "object", additionalProperties: false, properties: { name: NAME, quotas: { type: "object" } } },
      },
    },
    async (request) => {
      const c = requireInstanceAdmin(request.caller, "changing a team");
      const team = t.store.team(request.params.teamID);
      if (!team) throw new BurrowError(Code.NotFound, `team "${request.params.teamID}" not found`);
      if (request.body.name !== undefined) t.store.renameTeam(team.teamId, request.body.name);
      if (request.body.quotas !== undefined) t.store.setQuotas(team.teamId, parseQuotaPatch(request.body.quotas, team.quotas));
      t.audit.record({ teamId: team.teamId, keyId: c.keyPublicId, action: "update", resourceKind: "team", resourceId: team.teamId, detail: request.body });
      return burrowView(team.teamId);
    },
  );

  app.delete<{ Params: { teamID: string }; Querystring: { force?: boolean } }>(
    "/burrow/v1/teams/:teamID",
    {
      schema: {
        params: teamIdParams,
        querystring: { type: "object", additionalProperties: false, properties: { force: { type: "boolean", default: false } } },
      },
    },
    async (request) => {
      const c = requireInstanceAdmin(request.caller, "deleting a team");
      const deps = { store: t.store, audit: t.audit, streams: t.streams, resources, defaultTeamId: t.defaultTeamId };
      return { teamID: request.params.teamID, deleted: await deleteTeam(deps, c, request.params.teamID, request.query.force === true) };
    },
  );
}
