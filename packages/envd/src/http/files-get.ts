import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import type { EnvdContext } from "../context.js";
import { errnoOf, HttpError } from "../errors.js";
import { authorizeFileRequest, resolveFilePath } from "./file-request.js";
import { parseRange } from "./range.js";

function contentDisposition(name: string): string {
  // RFC 6266: ASCII names quoted, anything else as RFC 5987 filename*
  if (/^[\x20-\x7e]*$/.test(name)) return `inline; filename="${name.replace(/(["\\])/g, "\\$1")}"`;
  return `inline; filename*=utf-8''${encodeURIComponent(name)}`;
}

/**
 * Gzip only when the client asks for gzip and nothing else, as the SDK does for `files.read(…, {gzip: true})`.
 * HTTP clients such as undici's fetch send `gzip, deflate` on every request by default; compressing every
 * download on the fly would cut read throughput several times over for data that is often incompressible.
 */
function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  const codings = header
    .split(",")
    .map((part) => part.trim().split(";"))
    .filter(([, ...params]) => !params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p)))
    .map(([coding]) => coding?.trim().toLowerCase());
  return codings.length === 1 && codings[0] === "gzip";
}

/** GET /files: the file's bytes, with Range and (when accepted, for whole files) gzip. */
export async function getFile(env: EnvdContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { user, rawPath } = authorizeFileRequest(env, req, url, "read");
  const path = resolveFilePath(env, user, rawPath ?? "");
  const s = await stat(path).catch((err: unknown) => {
    if (errnoOf(err) === "ENOENT" || errnoOf(err) === "ENOTDIR") throw new HttpError(404, `path '${path}' does not exist`);
    if (errnoOf(err) === "EACCES") throw new HttpError(403, `permission denied for '${path}'`);
    throw err;
  });
  if (s.isDirectory()) throw new HttpError(400, `path '${path}' is a directory`);
  if (!s.isFile()) throw new HttpError(400, `path '${path}' is not a regular file`);

  const headers: Record<string, string | number> = {
    "Content-Type": "application/octet-stream",
    "Content-Disposition": contentDisposition(basename(path)),
    "Accept-Ranges": "bytes",
    "Last-Modified": s.mtime.toUTCString(),
  };
  const range = parseRange(req.headers.range, s.size);
  if (range.kind === "unsatisfiable") {
    res.writeHead(416, { "Content-Range": `bytes */${s.size}`, "Content-Type": "application/json" });
    res.end(JSON.stringify({ code: 416, message: "requested range not satisfiable" }));
    return;
  }
  const head = req.method === "HEAD";
  if (range.kind === "partial") {
    headers["Content-Range"] = `bytes ${range.start}-${range.end}/${s.size}`;
    headers["Content-Length"] = range.end - range.start + 1;
    res.writeHead(206, headers);
    if (head) return void res.end();
    await pipeline(createReadStream(path, { start: range.start, end: range.end }), res);
    return;
  }
  if (s.size > 0 && acceptsGzip(req.headers["accept-encoding"])) {
    headers["Content-Encoding"] = "gzip";
    headers.Vary = "Accept-Encoding";
    res.writeHead(200, headers);
    if (head) return void res.end();
    await pipeline(createReadStream(path), createGzip({ level: 1 }), res);
    return;
  }
  headers["Content-Length"] = s.size;
  res.writeHead(200, headers);
  if (head) return void res.end();
  await pipeline(createReadStream(path), res);
}
