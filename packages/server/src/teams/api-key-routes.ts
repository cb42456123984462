// E2B's team API keys: `GET/POST /api-keys`, `PATCH/DELETE /api-keys/{apiKeyID}` in E2B's shapes (TeamAPIKey,
// CreatedTeamAPIKey), for team admin keys. The instance admin may name another team (`teamID` query or body field,
// a Burrow extension). Deleting a key revokes it at once: its next request is 401 and its open requests end.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { generateApiKey } from "../auth/ensure-api-key.js";
import { requireTeamAdmin, type Caller } from "./caller.js";
import type { TeamKey } from "./team-store.js";
import type { TeamServices } from "./team-services.js";

const keyIdParams = { type: "object", required: ["apiKeyID"], properties: { apiKeyID: { type: "string", minLength: 1, maxLength: 64 } } } as const;
const NAME = { type: "string", minLength: 1, maxLength: 128 } as const;
const KEY_PREFIX = "e2b_";

/** E2B's IdentifierMaskingDetails: the key's type prefix, length and the visible ends of the rest. */
function mask(k: TeamKey) {
  const prefix = k.prefix.startsWith(KEY_PREFIX) ? KEY_PREFIX : "";
  return {
    prefix,
    valueLength: (k.valueLength ?? 0) - prefix.length,
    maskedValuePrefix: k.prefix.slice(prefix.length),
    maskedValueSuffix: k.suffix ?? "",
  };
}

export function toTeamApiKey(k: TeamKey) {
  return {
    id: k.publicId,
    name: k.name,
    mask: mask(k),
    createdAt: k.createdAt.toISOString(),
    createdBy: null,
    lastUsed: k.lastUsed?.toISOString() ?? null,
    // Burrow's additions: which team and what the key may do.
    teamID: k.teamId,
    role: k.role,
  };
}

export function toCreatedKey(k: TeamKey, plaintext: string) {
  return { ...toTeamApiKey(k), key: plaintext };
}

export function registerApiKeyRoutes(app: FastifyInstance, t: TeamServices): void {
  /** The team a key request acts on: the caller's, or the one the instance admin names. */
  const targetTeam = (c: Caller, teamId: string | undefined): string => {
    if (teamId === undefined || teamId === c.teamId) return c.teamId;
    if (!c.instanceAdmin || !t.store.team(teamId)) throw new BurrowError(Code.NotFound, `team "${teamId}" not found`);
    return teamId;
  };
  /** A key the caller may manage: of its team (any team for the instance admin); others are 404. */
  const managedKey = (c: Caller, publicId: string): TeamKey => {
    const key = t.store.keyByPublicId(publicId);
    if (!key || key.revokedAt || (!c.instanceAdmin && key.teamId !== c.teamId)) throw new BurrowError(Code.NotFound, `API key "${publicId}" not found`);
    return key;
  };

  app.get<{ Querystring: { teamID?: string } }>(
    "/api-keys",
    { schema: { querystring: { type: "object", properties: { teamID: { type: "string" } } } } },
    async (request) => {
      const c = requireTeamAdmin(request.caller);
      return t.store.keysOf(targetTeam(c, request.query.teamID)).map(toTeamApiKey);
    },
  );

  app.post<{ Body: { name: string; teamID?: string; admin?: boolean } }>(
    "/api-keys",
    {
      schema: {
        body: {
          type: "object",
          required: ["name"],
          additionalProperties: false,
          properties: { name: NAME, teamID: { type: "string" }, admin: { type: "boolean", description: "Burrow: may manage its team's keys" } },
        },
      },
    },
    async (request, reply) => {
      const c = requireTeamAdmin(request.caller);
      const teamId = targetTeam(c, request.body.teamID);
      const plaintext = generateApiKey();
      const key = t.store.addKey(plaintext, { teamId, name: request.body.name, role: request.body.admin ? "admin" : "member" });
      t.audit.record({ teamId, keyId: c.keyPublicId, action: "create", resourceKind: "api_key", resourceId: key.publicId, detail: { name: key.name, role: key.role } });
      return reply.code(201).send(toCreatedKey(key, plaintext));
    },
  );

  app.patch<{ Params: { apiKeyID: string }; Body: { name: string } }>(
    "/api-keys/:apiKeyID",
    { schema: { params: keyIdParams, body: { type: "object", required: ["name"], additionalProperties: false, properties: { name: NAME } } } },
    async (request, reply) => {
      const c = requireTeamAdmin(request.caller);
      const key = managedKey(c, request.params.apiKeyID);
      t.store.renameKey(key.id, request.body.name);
      t.audit.record({ teamId: key.teamId, keyId: c.keyPublicId, action: "update", resourceKind: "api_key", resourceId: key.publicId, detail: { name: request.body.name } });
      return reply.code(200).header("content-length", "0").send();
    },
  );

  app.delete<{ Params: { apiKeyID: string } }>("/api-keys/:apiKeyID", { schema: { params: keyIdParams } }, async (request, reply) => {
    const c = requireTeamAdmin(request.caller);
    const key = managedKey(c, request.params.apiKeyID);
    if (key.role === "instance_admin") {
      throw new BurrowError(Code.FailedPrecondition, "the instance admin key cannot be deleted through the API (it would lock the operator out)");
    }
    t.store.revokeKey(key.id);
    t.streams.endAll(key.id, reply.raw);
    t.audit.record({ teamId: key.teamId, keyId: c.keyPublicId, action: "delete", resourceKind: "api_key", resourceId: key.publicId });
    return reply.code(204).send();
  });
}
