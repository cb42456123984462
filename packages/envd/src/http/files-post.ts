import { createWriteStream } from "node:fs";
import { chown, rm, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename, dirname } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { BurrowError, Code, errnoOf } from "@burrow/protocol/errors";
import type { EnvdContext } from "../context.js";
import { replaceMetadata } from "../filesystem/metadata.js";
import { mkdirAllOwned } from "../filesystem/owned-mkdir.js";
import type { SandboxUser } from "../users/user-db.js";
import { decodedBody, drainRequest } from "./body.js";
import { authorizeFileRequest, resolveFilePath } from "./file-request.js";
import { multipartBoundary, readMultipart } from "./multipart.js";
import { sendJson } from "./respond.js";

interface WrittenFile {
  path: string;
  name: string;
  type: "file";
  metadata?: Record<string, string>;
}

const METADATA_HEADER = "x-metadata-";
const MAX_METADATA_KEYS = 64;

/** X-Metadata-<Key> headers → `{<lowercased key>: value}` (Node already lowercases header names). */
function metadataFromHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (!name.startsWith(METADATA_HEADER) || value === undefined) continue;
    const key = name.slice(METADATA_HEADER.length);
    if (!key) continue;
    out[key] = Array.isArray(value) ? value.join(", ") : value;
  }
  if (Object.keys(out).length > MAX_METADATA_KEYS) throw new BurrowError(Code.InvalidArgument, `too many metadata keys (max ${MAX_METADATA_KEYS})`);
  return out;
}

/** A request body that is not what its Content-Encoding says (zlib reports `Z_DATA_ERROR`, `Z_BUF_ERROR`…). */
function badEncodingError(err: unknown): BurrowError | undefined {
  const code = errnoOf(err);
  return code?.startsWith("Z_") ? new BurrowError(Code.InvalidArgument, `request body is not valid gzip: ${(err as Error).message}`) : undefined;
}

function writeError(err: unknown, path: string): BurrowError {
  if (err instanceof BurrowError) return err;
  const encoding = badEncodingError(err);
  if (encoding) return encoding;
  const code = errnoOf(err);
  if (code === "ENOSPC" || code === "EDQUOT") return new BurrowError(Code.ResourceExhausted, `not enough disk space to write '${path}'`, { reason: "disk_full" });
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") return new BurrowError(Code.PermissionDenied, `permission denied writing '${path}'`);
  if (code === "ENOTDIR" || code === "EISDIR") return new BurrowError(Code.InvalidArgument, `path '${path}' is not a writable file path`);
  if (code === "ENAMETOOLONG") return new BurrowError(Code.InvalidArgument, `path '${path}' is too long`);
  return new BurrowError(Code.Internal, `failed to write '${path}': ${(err as Error).message}`);
}

async function writeOne(
  path: string,
  body: AsyncIterable<Buffer> | Readable,
  user: SandboxUser,
  metadata: Record<string, string>,
): Promise<WrittenFile> {
  let existing: Awaited<ReturnType<typeof stat>> | undefined;
  try {
    existing = await stat(path).catch(() => undefined);
    if (existing?.isDirectory()) throw new BurrowError(Code.InvalidArgument, `path '${path}' is a directory`);
    await mkdirAllOwned(dirname(path), user);
    await pipeline(body instanceof Readable ? body : Readable.from(body), createWriteStream(path, { mode: 0o644 }));
    await chown(path, user.uid, user.gid);
    replaceMetadata(path, metadata);
  } catch (err) {
    // A body that broke off (truncated multipart, bad gzip, client gone) must not leave a half-written new
    // file behind. (An existing file is overwritten in place, as upstream does, so that watchers see a write.)
    if (existing === undefined) await rm(path, { force: true }).catch(() => undefined);
    throw writeError(err, path);
  }
  const out: WrittenFile = { path, name: basename(path), type: "file" };
  if (Object.keys(metadata).length > 0) out.metadata = metadata;
  return out;
}

/** POST /files: multipart (one or many parts, filename = destination) or a raw body with `?path=`. */
export async function postFiles(env: EnvdContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { user, rawPath } = authorizeFileRequest(env, req, url, "write");
  const metadata = metadataFromHeaders(req);
  const contentType = req.headers["content-type"] ?? "";
  const body = decodedBody(req);
  const written: WrittenFile[] = [];

  try {
    await writeAll(env, body, contentType, rawPath, user, metadata, written);
  } catch (err) {
    await drainRequest(req);
    throw badEncodingError(err) ?? err;
  }
  env.log.info("files written", { count: written.length, user: user.name });
  sendJson(res, 200, written);
}

async function writeAll(
  env: EnvdContext,
  body: Readable,
  contentType: string,
  rawPath: string | null,
  user: SandboxUser,
  metadata: Record<string, string>,
  written: WrittenFile[],
): Promise<void> {
  if (/^multipart\/form-data/i.test(contentType)) {
    const seen = new Set<string>();
    for await (const part of readMultipart(body, multipartBoundary(contentType))) {
      if (part.name !== "file") continue;
      const raw = rawPath ?? part.filename;
      if (!raw) throw new BurrowError(Code.InvalidArgument, "multipart part without a filename and no path query parameter");
      const path = resolveFilePath(env, user, raw);
      if (seen.has(path)) throw new BurrowError(Code.InvalidArgument, `cannot upload multiple files to the same path '${path}'`);
      seen.add(path);
      written.push(await writeOne(path, part.body, user, metadata));
    }
    if (written.length === 0) throw new BurrowError(Code.InvalidArgument, "no file part in the multipart body");
  } else {
    if (rawPath === null) throw new BurrowError(Code.InvalidArgument, "the path query parameter is required for a raw upload");
    written.push(await writeOne(resolveFilePath(env, user, rawPath), body, user, metadata));
  }
}
