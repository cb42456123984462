// The E2B Template build API plus the upload endpoint the files check points at.
// Errors leave through the app's error handler as `{"code": <status>, "message": "…"}`; the builder's errors
// carry Connect code names, which that handler maps.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Transform, type Readable } from "node:stream";
import { BurrowError, Code, type TemplateSummary } from "@burrow/protocol";
import { BuildAdmission, type BuildAdmissionPolicy } from "../admission/build-admission.js";
import type { ResolveTemplate, TemplateBuildService } from "./template-build-service.js";
import { UploadTokens } from "./upload-tokens.js";

export interface TemplateApiOptions {
  builder: TemplateBuildService;
  /** Runs before every route except the token-authorized upload. Omit when the app authenticates globally. */
  authenticate?: ((request: FastifyRequest) => Promise<void> | void) | undefined;
  /** How `GET /templates/aliases/{alias}` resolves names (ids, aliases, `name:tag`). */
  resolveTemplate: ResolveTemplate;
  /** Host-wide build admission (template limits against the host, builds at once); none when absent. */
  admission?: BuildAdmissionPolicy | undefined;
  /** Templates other nodes of a cluster published that this node has not fetched yet, listed with its own. */
  clusterTemplates?: (() => TemplateSummary[]) | undefined;
}

/** Path of the upload endpoint; the files check returns an absolute URL to it. */
export const UPLOAD_PATH_PREFIX = "/burrow/v1/uploads";

const HASH = "^[a-f0-9]{64}$";
/** Builds per page of GET /templates/{templateID} (E2B's default and maximum). */
const BUILDS_PAGE_MAX = 100;
const idParams = (...names: string[]) => ({
  type: "object",
  required: names,
  properties: Object.fromEntries(names.map((n) => [n, { type: "string", minLength: 1, maxLength: 256 }])),
});
const logEntrySchema = {
  type: "object",
  required: ["timestamp", "level", "message"],
  properties: {
    timestamp: { type: "string" },
    level: { type: "string" },
    message: { type: "string" },
    step: { type: "string" },
  },
} as const;

export function registerTemplateApi(app: FastifyInstance, opts: TemplateApiOptions): void {
  const { builder } = opts;
  const tokens = new UploadTokens();
  const builds = new BuildAdmission(builder, opts.admission);
  const onRequest = opts.authenticate
    ? [async (request: FastifyRequest) => void (await opts.authenticate?.(request))]
    : [];

  app.post<{ Body: { name?: string; alias?: string; tags?: string[]; cpuCount?: number; memoryMB?: number } }>(
    "/v3/templates",
    {
      onRequest,
      schema: {
        body: {
          type: "object",
          properties: {
            name: { type: "string", minLength: 1 },
            alias: { type: "string", minLength: 1, description: "deprecated; use name" },
            tags: { type: "array", items: { type: "string" } },
            cpuCount: { type: "integer", minimum: 1 },
            memoryMB: { type: "integer", minimum: 128 },
            minFreeDiskMb: { type: "integer" },
            teamID: { type: "string" },
          },
        },
      },
    },
    async (request, reply) => {
      const name = request.body.name ?? request.body.alias;
      if (!name) throw new BurrowError(Code.InvalidArgument, "name is required");
      builds.checkSize(request.body);
      const result = builder.requestBuild({
        name,
        tags: request.body.tags,
        cpuCount: request.body.cpuCount,
        memoryMB: request.body.memoryMB,
      });
      return reply.code(202).send(result);
    },
  );

  app.get<{ Params: { templateID: string; hash: string } }>(
    "/templates/:templateID/files/:hash",
    {
      onRequest,
      schema: {
        params: { type: "object", required: ["templateID", "hash"], properties: { templateID: { type: "string" }, hash: { type: "string", pattern: HASH } } },
      },
    },
    async (request, reply) => {
      const { templateID, hash } = request.params;
      // Present files are never replaced, so they get no upload URL (the SDK then skips the upload).
      if (await builder.hasFiles(templateID, hash)) return reply.code(201).send({ present: true });
      const url = `${origin(request)}${UPLOAD_PATH_PREFIX}/${encodeURIComponent(templateID)}/${hash}?token=${tokens.issue(templateID, hash)}`;
      return reply.code(201).send({ present: false, url });
    },
  );

  // The upload: raw tar(.gz) body, streamed to disk. Public (the SDK sends no API key here): the token authorizes.
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    scope.put<{ Params: { templateID: string; hash: string }; Querystring: { token?: string } }>(
      `${UPLOAD_PATH_PREFIX}/:templateID/:hash`,
      {
        config: { public: true, streamedBody: true },
        schema: {
          params: { type: "object", required: ["templateID", "hash"], properties: { templateID: { type: "string" }, hash: { type: "string", pattern: HASH } } },
        },
      },
      async (request, reply) => {
        const { templateID, hash } = request.params;
        const token = request.query.token;
        if (token === undefined || !tokens.check(token, templateID, hash)) {
          // A spent token is refused like any other; say why when the files are simply there already.
          if (await builder.hasFiles(templateID, hash).catch(() => false)) throw alreadyUploaded();
          throw new BurrowError(Code.PermissionDenied, "upload token missing, expired, already used or for another file");
        }
        // With a token issued before the files arrived (two builds uploading at once), the body is read: the same
        // bytes again are fine, other bytes are refused as a replacement.
        const contentLength = request.headers["content-length"] !== undefined ? Number(request.headers["content-length"]) : undefined;
        const max = builder.maxUploadBytes;
        // The route bypasses the API's body limit (a context is large); this is its own. The rest of a refused
        // body is not worth reading: the connection closes after the answer.
        if (contentLength !== undefined && contentLength > max) {
          reply.header("connection", "close");
          throw tooLarge(max);
        }
        tokens.spend(token);
        const body = (request.body ?? request.raw) as Readable;
        const limited = byteLimit(max);
        body.once("error", (error) => limited.destroy(error));
        const abort = new AbortController();
        const onClose = () => {
          if (!request.raw.complete) abort.abort(new Error("upload interrupted"));
        };
        request.raw.once("close", onClose);
        try {
          await builder.acceptUpload(templateID, hash, body.pipe(limited), { contentLength, signal: abort.signal });
        } catch (error) {
          if ((error as { statusCode?: unknown }).statusCode === 413) reply.header("connection", "close");
          throw error;
        } finally {
          request.raw.off("close", onClose);
        }
        return emptyReply(reply, 200);
      },
    );
  });

  app.post<{ Params: { templateID: string; buildID: string } }>(
    "/v2/templates/:templateID/builds/:buildID",
    { onRequest, schema: { params: idParams("templateID", "buildID"), body: { type: "object" } } },
    async (request, reply) => {
      builds.admit();
      builder.startBuild(request.params.templateID, request.params.buildID, request.body);
      builds.started(request.params.templateID, request.params.buildID);
      // openapi-fetch parses an empty 202 as JSON unless Content-Length is 0.
      return emptyReply(reply, 202);
    },
  );

  app.get<{ Params: { templateID: string; buildID: string }; Querystring: { logsOffset?: number } }>(
    "/templates/:templateID/builds/:buildID/status",
    {
      onRequest,
      schema: {
        params: idParams("templateID", "buildID"),
        querystring: { type: "object", properties: { logsOffset: { type: "integer", minimum: 0 }, limit: { type: "integer" }, level: { type: "string" } } },
        response: {
          200: {
            type: "object",
            required: ["buildID", "templateID", "status", "logEntries", "logs"],
            properties: {
              buildID: { type: "string" },
              templateID: { type: "string" },
              status: { type: "string", enum: ["waiting", "building", "ready", "error"] },
              logEntries: { type: "array", items: logEntrySchema },
              logs: { type: "array", items: { type: "string" } },
              reason: {
                type: "object",
                required: ["message"],
                properties: { message: { type: "string" }, step: { type: "string" }, logEntries: { type: "array", items: logEntrySchema } },
              },
            },
          },
        },
      },
    },
    async (request) => builder.status(request.params.templateID, request.params.buildID, request.query.logsOffset ?? 0),
  );

  app.get<{ Params: { alias: string } }>(
    "/templates/aliases/:alias",
    { onRequest, schema: { params: idParams("alias") } },
    async (request) => {
      const found = opts.resolveTemplate(request.params.alias);
      if (!found) throw new BurrowError(Code.NotFound, `template alias '${request.params.alias}' not found`);
      // Templates on a Burrow node belong to its operator: none is public.
      return { templateID: found.templateId, public: false };
    },
  );

  app.get("/templates", { onRequest }, async () =>
    [...builder.list(), ...(opts.clusterTemplates?.() ?? [])].map((t) => ({
      templateID: t.templateId,
      buildID: t.buildId ?? "",
      aliases: t.aliases,
      names: t.aliases,
      tags: t.tags,
      public: false,
      cpuCount: t.cpuCount,
      memoryMB: t.memoryMB,
      diskSizeMB: 0,
      createdAt: t.createdAt,
      updatedAt: t.createdAt,
      lastSpawnedAt: null,
      spawnCount: 0,
      buildCount: 1,
      buildStatus: t.buildStatus,
      envdVersion: "",
      createdBy: null,
    })),
  );

  // E2B's "list template builds": the template and a page of its builds, newest first; the cursor (X-Next-Token)
  // names the last build of a page, so builds started meanwhile do not shift the pages that follow.
  app.get<{ Params: { templateID: string }; Querystring: { limit?: number; nextToken?: string } }>(
    "/templates/:templateID",
    {
      onRequest,
      schema: {
        params: idParams("templateID"),
        querystring: {
          type: "object",
          properties: { limit: { type: "integer", minimum: 1, maximum: BUILDS_PAGE_MAX, default: BUILDS_PAGE_MAX }, nextToken: { type: "string" } },
        },
      },
    },
    async (request, reply) => {
      const template = builder.templateBuilds(request.params.templateID);
      const limit = request.query.limit ?? BUILDS_PAGE_MAX;
      const after = request.query.nextToken !== undefined ? decodeBuildCursor(request.query.nextToken) : undefined;
      const rest = after ? template.builds.filter((b) => b.createdAt < after.createdAt || (b.createdAt === after.createdAt && b.buildID < after.buildID)) : template.builds;
      const page = rest.slice(0, limit);
      const last = page[page.length - 1];
      if (rest.length > limit && last) reply.header("X-Next-Token", Buffer.from(`${last.createdAt}__${last.buildID}`).toString("base64url"));
      return reply.send({
        templateID: template.templateID,
        // Templates on a Burrow node belong to its operator: none is public.
        public: false,
        aliases: template.aliases,
        names: template.names,
        createdAt: template.createdAt,
        updatedAt: template.updatedAt,
        lastSpawnedAt: null,
        spawnCount: 0,
        builds: page,
      });
    },
  );

  app.get<{ Params: { templateID: string } }>(
    "/templates/:templateID/tags",
    { onRequest, schema: { params: idParams("templateID") } },
    async (request) => builder.tagsOf(request.params.templateID),
  );

  app.post<{ Body: { target: string; tags: string[] } }>(
    "/templates/tags",
    {
      onRequest,
      schema: {
        body: {
          type: "object",
          required: ["target", "tags"],
          properties: { target: { type: "string", minLength: 1 }, tags: { type: "array", items: { type: "string" }, minItems: 1 } },
        },
      },
    },
    async (request, reply) => reply.code(201).send(await builder.assignTags(request.body.target, request.body.tags)),
  );

  app.delete<{ Body: { name: string; tags: string[] } }>(
    "/templates/tags",
    {
      onRequest,
      schema: {
        body: {
          type: "object",
          required: ["name", "tags"],
          properties: { name: { type: "string", minLength: 1 }, tags: { type: "array", items: { type: "string" }, minItems: 1 } },
        },
      },
    },
    async (request, reply) => {
      await builder.removeTags(request.body.name, request.body.tags);
      return reply.code(204).send();
    },
  );

  app.delete<{ Params: { templateID: string } }>(
    "/templates/:templateID",
    { onRequest, schema: { params: idParams("templateID") } },
    async (request, reply) => {
      if (!(await builder.deleteTemplate(request.params.templateID))) {
        throw new BurrowError(Code.NotFound, `template '${request.params.templateID}' not found`);
      }
      return reply.code(204).send();
    },
  );
}

/** A nextToken of the builds list: base64url of `<createdAt>__<buildID>` of the last build of the page before. */
function decodeBuildCursor(token: string): { createdAt: string; buildID: string } {
  const [createdAt, buildID, extra] = Buffer.from(token, "base64url").toString("utf8").split("__");
  if (!createdAt || !buildID || extra !== undefined || Number.isNaN(Date.parse(createdAt))) {
    throw new BurrowError(Code.InvalidArgument, "invalid nextToken");
  }
  return { createdAt, buildID };
}

function alreadyUploaded(): BurrowError {
  return new BurrowError(Code.AlreadyExists, "these files are already uploaded for this template; an upload is written once and never replaced");
}

/** 413 in E2B's error shape (the error handler keeps a 4xx statusCode and its message). */
function tooLarge(max: number): Error {
  return Object.assign(new Error(`upload is larger than the server's limit of ${max} bytes`), { statusCode: 413 });
}

/** Passes at most `max` bytes; one more fails the stream with a 413. */
function byteLimit(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      done(seen > max ? tooLarge(max) : null, chunk);
    },
  });
}

function emptyReply(reply: FastifyReply, status: number): FastifyReply {
  return reply.code(status).header("content-length", "0").send();
}

/** Scheme and host the client used, so the upload URL works from wherever it called (e.g. 127.0.0.1:port). */
function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.headers.host ?? request.hostname}`;
}
