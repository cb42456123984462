import type { IncomingMessage } from "node:http";
import { PassThrough, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { BurrowError, Code } from "@burrow/protocol/errors";

/** Reads a small request body (JSON endpoints), refusing more than `limit` bytes. */
export async function readSmallBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  // destroyOnReturn:false: bailing out must not destroy the socket, so the 413 still reaches the client
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BurrowError(Code.ResourceExhausted, `request body exceeds ${limit} bytes`, { reason: "body_too_large" });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const raw = await readSmallBody(req, limit);
  if (raw.length === 0) return {};
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new BurrowError(Code.InvalidArgument, "request body is not valid JSON");
  }
}

/**
 * The request body, gunzipped when `Content-Encoding: gzip`; other encodings are refused. Always a stream of its
 * own piped from the request, so that a consumer failing half-way (disk full) destroys that stream, not the
 * request: the rest of the body can then be drained and the client gets the error response instead of a reset.
 */
export function decodedBody(req: IncomingMessage): Readable {
  const enc = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (enc === "identity" || enc === "") return req.pipe(new PassThrough());
  if (enc === "gzip" || enc === "x-gzip") return req.pipe(createGunzip()).on("error", () => {});
  throw new BurrowError(Code.InvalidArgument, `unsupported Content-Encoding '${enc}'`);
}

/** Largest remainder of a failed upload that is read and discarded so the error response reaches the client. */
const MAX_DRAIN_BYTES = 1 << 30;

/** Read and discard what is left of a request body (bounded), then resolve. */
export async function drainRequest(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return;
  req.unpipe();
  let drained = 0;
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    req.on("data", (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > MAX_DRAIN_BYTES) {
        req.destroy();
        done();
      }
    });
    req.once("end", done);
    req.once("close", done);
    req.once("error", done);
    req.resume();
  });
}
