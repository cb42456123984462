// E2B's secrets API (/secrets): create, list, read metadata by id or name, new value, delete. Every route answers
// metadata only; the response schemas have no value field, so even a mistake upstream could not serialize one.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { SecretOwner, SecretService } from "../../secrets/index.js";
import { errorResponses } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { newSecretSchema, secretIdParams, secretListQuery, secretSchema, secretUpdateSchema, toSecret } from "./secret-schemas.js";

type Metadata = Record<string, string>;

/**
 * The owner of what a request creates and sees: its key's team, as the team's anchor key (teams/caller.ts), so every
 * key of a team shares its secrets (the auth hook ran).
 */
export function ownerOf(request: FastifyRequest): SecretOwner {
  return { apiKeyId: request.caller?.teamAnchorKeyId ?? request.apiKeyId! };
}

export function registerSecretRoutes(app: FastifyInstance, secrets: SecretService): void {
  app.post<{ Body: { name: string; value: string; metadata?: Metadata } }>(
    "/secrets",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Create a secret; the value is stored encrypted and never returned",
        body: newSecretSchema,
        response: { 201: secretSchema, ...errorResponses(400, 401, 409, 500) },
      },
    },
    async (request, reply) => reply.code(201).send(toSecret(secrets.create(ownerOf(request), request.body))),
  );

  app.get<{ Querystring: { limit?: number; nextToken?: string } }>(
    "/secrets",
    {
      schema: {
        summary: "List secrets (metadata only), oldest first; paginate with the X-Next-Token response header",
        querystring: secretListQuery,
        response: { 200: { type: "array", items: secretSchema }, ...errorResponses(400, 401, 500) },
      },
    },
    async (request, reply) => {
      const page = secrets.list(ownerOf(request), request.query);
      if (page.nextToken) reply.header("X-Next-Token", page.nextToken);
      return page.secrets.map(toSecret);
    },
  );

  app.get<{ Params: { secretID: string } }>(
    "/secrets/:secretID",
    {
      schema: {
        summary: "One secret's metadata, by id or name",
        params: secretIdParams,
        response: { 200: secretSchema, ...errorResponses(401, 404, 500) },
      },
    },
    async (request) => toSecret(secrets.get(ownerOf(request), request.params.secretID)),
  );

  app.post<{ Params: { secretID: string }; Body: { value: string; metadata?: Metadata } }>(
    "/secrets/:secretID",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Store a new value as the secret's next version (metadata replaced when sent)",
        params: secretIdParams,
        body: secretUpdateSchema,
        response: { 200: secretSchema, ...errorResponses(400, 401, 404, 500) },
      },
    },
    async (request) => toSecret(secrets.update(ownerOf(request), request.params.secretID, request.body)),
  );

  app.delete<{ Params: { secretID: string } }>(
    "/secrets/:secretID",
    {
      schema: {
        summary: "Delete a secret and every version of it",
        params: secretIdParams,
        response: { 204: { type: "null" }, ...errorResponses(401, 404, 500) },
      },
    },
    async (request, reply) => {
      secrets.delete(ownerOf(request), request.params.secretID);
      return reply.code(204).send();
    },
  );
}
