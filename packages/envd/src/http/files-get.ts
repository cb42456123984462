import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename } from "node:path";
import { Transform, type Duplex, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { BurrowError, Code, errnoOf } from "@burrow/protocol/errors";
import type { EnvdContext } from "../context.js";
import { authorizeFileRequest, resolveFilePath } from "./file-request.js";
import { parseRange } from "./range.js";
import { hasUnknownSize, openUnsizedFile } from "./unsized-file.js";

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

function statusForOpenError(err: unknown, path: string): never {
  const code = errnoOf(err);
  if (code === "ENOENT" || code === "ENOTDIR") throw new BurrowError(Code.NotFound, `path '${path}' does not exist`);
  if (code === "EACCES" || code === "EPERM") throw new BurrowError(Code.PermissionDenied, `permission denied for '${path}'`);
  if (code === "EIO" || code === "EINVAL" || code === "ENXIO" || code === "EISDIR") {
    throw new BurrowError(Code.InvalidArgument, `path '${path}' cannot be read: ${code.toLowerCase()}`);
  }
  throw err;
}

/**
 * Sends the body through `stages` and ends the response only when exactly `expected` bytes went out: a file that
 * shrank while being read would otherwise leave a keep-alive client waiting for bytes that never come, so the
 * connection is dropped instead.
 */
async function sendBody(res: ServerResponse, stages: [Readable, ...Duplex[]], expected?: number): Promise<void> {
  let sent = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      sent += chunk.length;
      cb(null, chunk);
    },
  });
  await pipeline([...stages, counter, res], { end: false });
  if (expected !== undefined && sent !== expected) res.destroy();
  else res.end();
}

const gzipStage = () => createGzip({ level: 1 });
// gzip output has no length up front: chunked, named so that HEAD answers carry it as well
const GZIP_HEADERS = { "Content-Encoding": "gzip", Vary: "Accept-Encoding", "Transfer-Encoding": "chunked" };

/**
 * GET /files: the file's bytes, with Range and (when accepted, for whole files) gzip. Pseudo files and FIFOs,
 * whose size stat cannot tell, are streamed to EOF with chunked encoding.
 */
export async function getFile(env: EnvdContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { user, rawPath } = authorizeFileRequest(env, req, url, "read");
  const path = resolveFilePath(env, user, rawPath ?? "");
  const s = await stat(path).catch((err: unknown) => statusForOpenError(err, path));
  if (s.isDirectory()) throw new BurrowError(Code.InvalidArgument, `path '${path}' is a directory`);
  if (!s.isFile() && !s.isFIFO()) throw new BurrowError(Code.InvalidArgument, `path '${path}' is not a regular file`);

  const headers: Record<string, string | number> = {
    "Content-Type": "application/octet-stream",
    "Content-Disposition": contentDisposition(basename(path)),
    "Last-Modified": s.mtime.toUTCString(),
  };
  const head = req.method === "HEAD";
  const gzip = acceptsGzip(req.headers["accept-encoding"]);

  if (await hasUnknownSize(path, s)) {
    // Chunked and no ranges: the length is known only at EOF. Named explicitly so that a HEAD answer says what
    // its GET would (without it a client cannot tell where the HEAD response ends and drops the connection).
    const source = head ? undefined : await openUnsizedFile(path, s).catch((err: unknown) => statusForOpenError(err, path));
    headers["Transfer-Encoding"] = "chunked";
    res.writeHead(200, gzip ? { ...headers, ...GZIP_HEADERS } : headers);
    if (!source) return void res.end();
    // A FIFO may keep the first byte waiting: the client has its answer meanwhile (the head is ASCII only).
    res.flushHeaders();
    await sendBody(res, gzip ? [source, gzipStage()] : [source]);
    return;
  }

  headers["Accept-Ranges"] = "bytes";
  const range = parseRange(req.headers.range, s.size);
  if (range.kind === "unsatisfiable") {
    res.writeHead(416, { "Content-Range": `bytes */${s.size}`, "Content-Type": "application/json" });
    res.end(JSON.stringify({ code: 416, message: "requested range not satisfiable" }));
    return;
  }
  // Bytes beyond the size stat gave (a file growing while it is read) are never sent: they would overrun the
  // Content-Length and corrupt the next response on the keep-alive connection.
  const [start, end] = range.kind === "partial" ? [range.start, range.end] : [0, s.size - 1];
  const source = () => createReadStream(path, { start, end });
  if (range.kind === "partial") {
    headers["Content-Range"] = `bytes ${start}-${end}/${s.size}`;
    headers["Content-Length"] = end - start + 1;
    res.writeHead(206, headers);
    if (head) return void res.end();
    await sendBody(res, [source()], end - start + 1);
    return;
  }
  if (gzip) {
    res.writeHead(200, { ...headers, ...GZIP_HEADERS });
    if (head) return void res.end();
    await sendBody(res, [source(), gzipStage()]);
    return;
  }
  headers["Content-Length"] = s.size;
  res.writeHead(200, headers);
  if (head) return void res.end();
  await sendBody(res, [source()], s.size);
}
