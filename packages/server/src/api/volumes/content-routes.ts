// E2B's volume content API (/volumecontent/{volumeID}/dir|path|file), which E2B keeps closed: files of one volume,
// without any sandbox. Public as far as API keys go: the volume's token (Authorization: Bearer) is the credential.
// File bodies stream both ways; nothing is held in memory whole.
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { VolumeService } from "../../volumes/volume-service.js";
import { drain, VolumeFiles, type Ownership } from "../../volumes/volume-files.js";

interface ContentQuery {
  path?: string;
  depth?: string;
  uid?: string;
  gid?: string;
  mode?: string;
  force?: string;
}

type ContentRequest = FastifyRequest<{ Params: { volumeID: string }; Querystring: ContentQuery }>;

function int(query: ContentQuery, key: "depth" | "uid" | "gid" | "mode"): number | undefined {
  const raw = query[key];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    throw new BurrowError(Code.InvalidArgument, `${key} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function bool(query: ContentQuery, key: "force"): boolean | undefined {
  const raw = query[key];
  if (raw === undefined || raw === "") return undefined;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new BurrowError(Code.InvalidArgument, `${key} must be true or false, got ${JSON.stringify(raw)}`);
}

function pathOf(query: ContentQuery): string {
  if (typeof query.path !== "string" || query.path === "") throw new BurrowError(Code.InvalidArgument, "the path query parameter is required");
  return query.path;
}

function ownership(query: ContentQuery): Ownership {
  return { uid: int(query, "uid"), gid: int(query, "gid"), mode: int(query, "mode") };
}

const params = { type: "object", required: ["volumeID"], properties: { volumeID: { type: "string", minLength: 1, maxLength: 128 } } } as const;

export function registerVolumeContentRoutes(app: FastifyInstance, volumes: VolumeService): void {
  /** Authorize, open the volume's root, run, close. */
  const withFiles = async <T>(request: ContentRequest, op: (files: VolumeFiles) => Promise<T>): Promise<T> => {
    const { host } = await volumes.authorizeContent(request.params.volumeID, request.headers.authorization);
    const files = await VolumeFiles.open(host);
    try {
      return await op(files);
    } finally {
      await files.close();
    }
  };

  app.register(async (scope) => {
    // File bodies arrive as raw streams, whatever their content type; PATCH's JSON is parsed as usual.
    scope.addContentTypeParser("application/octet-stream", (_request, payload, done) => done(null, payload));
    const base = "/volumecontent/:volumeID";
    const route = { config: { public: true, streamedBody: true }, schema: { params } };

    scope.get(`${base}/dir`, route, async (request: ContentRequest) =>
      withFiles(request, (files) => files.list(pathOf(request.query), int(request.query, "depth") ?? 1)),
    );

    scope.post(`${base}/dir`, route, async (request: ContentRequest, reply) => {
      const stat = await withFiles(request, (files) => files.makeDir(pathOf(request.query), { ...ownership(request.query), force: bool(request.query, "force") }));
      return reply.code(201).send(stat);
    });

    scope.get(`${base}/path`, route, async (request: ContentRequest) => withFiles(request, (files) => files.getInfo(pathOf(request.query))));

    scope.patch(`${base}/path`, route, async (request: ContentRequest) => {
      const body = (request.body ?? {}) as { uid?: unknown; gid?: unknown; mode?: unknown };
      const field = (key: "uid" | "gid" | "mode"): number | undefined => {
        const value = body[key];
        if (value === undefined || value === null) return undefined;
        if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw new BurrowError(Code.InvalidArgument, `${key} must be a non-negative integer`);
        return value;
      };
      const own = { uid: field("uid"), gid: field("gid"), mode: field("mode") };
      return withFiles(request, (files) => files.updateMetadata(pathOf(request.query), own));
    });

    scope.delete(`${base}/path`, route, async (request: ContentRequest, reply) => {
      await withFiles(request, (files) => files.remove(pathOf(request.query)));
      return reply.code(204).send();
    });

    scope.get(`${base}/file`, route, async (request: ContentRequest, reply) => {
      const { host } = await volumes.authorizeContent(request.params.volumeID, request.headers.authorization);
      const files = await VolumeFiles.open(host);
      // The root descriptor is only needed to open the file; the stream keeps its own.
      const opened = await files.readFile(pathOf(request.query)).finally(() => files.close());
      return reply.type("application/octet-stream").header("content-length", opened.size).send(opened.stream);
    });

    scope.put(`${base}/file`, route, async (request: ContentRequest, reply) => {
      // An empty body (an empty file) reaches no content-type parser.
      const body = (request.body ?? Readable.from([])) as Readable;
      if (typeof body.pipe !== "function") {
        throw new BurrowError(Code.InvalidArgument, "send the file's bytes as the body, Content-Type: application/octet-stream");
      }
      try {
        const stat = await withFiles(request, (files) => files.writeFile(pathOf(request.query), body, ownership(request.query)));
        return reply.code(201).send(stat);
      } catch (error) {
        // Refused before or while writing (bad token, full volume…): the client is still sending.
        await drain(body);
        throw error;
      }
    });
  });
}
