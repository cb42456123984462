// E2B's volume control API: POST/GET /volumes, GET/DELETE /volumes/{volumeID}. Guarded by the API key like every
// route; the volume's token in the answers is the content API's credential.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { VolumeService } from "../../volumes/volume-service.js";
import type { VolumeRow } from "../../volumes/volume-store.js";
import { errorResponses } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";

const volumeSchema = {
  type: "object",
  required: ["volumeID", "name"],
  properties: { volumeID: { type: "string" }, name: { type: "string" } },
} as const;

const volumeAndTokenSchema = {
  type: "object",
  required: ["volumeID", "name", "token"],
  properties: { ...volumeSchema.properties, token: { type: "string" } },
} as const;

const params = { type: "object", required: ["volumeID"], properties: { volumeID: { type: "string", minLength: 1, maxLength: 128 } } } as const;

export function registerVolumeRoutes(app: FastifyInstance, volumes: VolumeService): void {
  const withToken = (row: VolumeRow) => ({ volumeID: row.volumeId, name: row.name, token: volumes.tokenOf(row) });

  app.post<{ Body: { name: string } }>(
    "/volumes",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Create a volume",
        body: { type: "object", required: ["name"], properties: { name: { type: "string" } } },
        response: { 201: volumeAndTokenSchema, ...errorResponses(400, 401, 409, 500, 501, 507) },
      },
    },
    async (request, reply) => {
      const row = await volumes.create(request.body.name, { apiKeyId: request.apiKeyId });
      return reply.code(201).send(withToken(row));
    },
  );

  app.get("/volumes", { schema: { summary: "List volumes", response: { 200: { type: "array", items: volumeSchema }, ...errorResponses(401, 501) } } }, async (request) =>
    volumes.list({ apiKeyId: request.apiKeyId }).map((row) => ({ volumeID: row.volumeId, name: row.name })),
  );

  app.get<{ Params: { volumeID: string } }>(
    "/volumes/:volumeID",
    { schema: { summary: "Get a volume and its token", params, response: { 200: volumeAndTokenSchema, ...errorResponses(401, 404, 501) } } },
    async (request) => withToken(volumes.get(request.params.volumeID, { apiKeyId: request.apiKeyId })),
  );

  app.delete<{ Params: { volumeID: string } }>(
    "/volumes/:volumeID",
    { schema: { summary: "Delete a volume and its files (refused while a sandbox mounts it)", params, response: errorResponses(401, 404, 409, 501) } },
    async (request, reply) => {
      if (!volumes.supported) throw new BurrowError(Code.Unimplemented, "volumes are not supported by this orchestrator");
      await volumes.delete(request.params.volumeID, { apiKeyId: request.apiKeyId });
      return reply.code(204).send();
    },
  );
}
