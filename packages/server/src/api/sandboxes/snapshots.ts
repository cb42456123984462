// Snapshots (E2B `createSnapshot`, `listSnapshots`; `deleteSnapshot` is DELETE /templates/{id}, in templates-api/):
// a snapshot is a template made from a sandbox's files, usable as `templateID` in create. Burrow snapshots keep
// the filesystem only: running processes and memory are not copied (CRIU checkpointing does not work on the
// kernels Burrow runs on), so a sandbox created from a snapshot starts fresh processes on the snapshot's files.
// Snapshots are charged to the sandbox's owner: beyond the owner's storage quota 507, beyond the number kept from
// one sandbox 429 (admission/snapshot-quota.ts); deleting snapshots frees the charge.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";

const LIMIT_MAX = 100;

const snapshotInfoSchema = {
  type: "object",
  required: ["snapshotID", "names"],
  properties: { snapshotID: { type: "string" }, names: { type: "array", items: { type: "string" } } },
} as const;

const snapshotBody = {
  type: "object",
  properties: { name: { type: "string", minLength: 1, description: "optional name; it moves to this snapshot if another had it" } },
} as const;

interface ListQuery {
  sandboxID?: string;
  name?: string;
  limit?: number;
  nextToken?: string;
}

function decodeToken(token: string): number {
  const offset = Number(Buffer.from(token, "base64url").toString("utf8"));
  if (!Number.isInteger(offset) || offset < 0) throw new BurrowError(Code.InvalidArgument, "invalid nextToken");
  return offset;
}

export function registerSnapshotRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { sandboxID: string }; Body: { name?: string } | undefined }>(
    "/sandboxes/:sandboxID/snapshots",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Snapshot a sandbox's files into a template (processes and memory are not kept)",
        params: sandboxIdParams,
        body: snapshotBody,
        response: { 201: snapshotInfoSchema, ...errorResponses(400, 401, 404, 429, 500, 501, 507) },
      },
    },
    async (request, reply) => {
      const info = await ctx.sandboxes.snapshot(request.params.sandboxID, request.body?.name);
      return reply.code(201).send({ snapshotID: info.snapshotId, names: info.names });
    },
  );

  app.get<{ Querystring: ListQuery }>(
    "/snapshots",
    {
      schema: {
        summary: "List snapshots, newest first; paginate with the X-Next-Token response header",
        querystring: {
          type: "object",
          properties: {
            sandboxID: { type: "string" },
            name: { type: "string" },
            limit: { type: "integer", minimum: 1, maximum: LIMIT_MAX, default: LIMIT_MAX },
            nextToken: { type: "string" },
          },
        },
        response: { 200: { type: "array", items: snapshotInfoSchema }, ...errorResponses(400, 401, 501) },
      },
    },
    async (request, reply) => {
      const q = request.query;
      let snapshots = ctx.sandboxes.listSnapshots({ sandboxId: q.sandboxID }).filter((s) => request.caller === null || ctx.teams.ownership.canSee(request.caller, "snapshot", s.snapshotId));
      if (q.name !== undefined) {
        const wanted = q.name.replace(/:(default|latest)$/, "");
        snapshots = snapshots.filter((s) => s.snapshotId === wanted || s.names.includes(wanted));
      }
      const limit = q.limit ?? LIMIT_MAX;
      const offset = q.nextToken ? decodeToken(q.nextToken) : 0;
      const page = snapshots.slice(offset, offset + limit);
      if (snapshots.length > offset + limit) reply.header("X-Next-Token", Buffer.from(String(offset + limit)).toString("base64url"));
      return reply.send(page.map((s) => ({ snapshotID: s.snapshotId, names: s.names })));
    },
  );
}
