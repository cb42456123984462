import type { IncomingMessage } from "node:http";
import { createGunzip } from "node:zlib";
import type { Readable } from "node:stream";
import { HttpError } from "../errors.js";

/** Reads a small request body (JSON endpoints), refusing more than `limit` bytes. */
export async function readSmallBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  // destroyOnReturn:false: bailing out must not destroy the socket, so the 413 still reaches the client
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, `request body exceeds ${limit} bytes`);
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
    throw new HttpError(400, "request body is not valid JSON");
  }
}

/** The request body, gunzipped when `Content-Encoding: gzip`; other encodings are refused. */
export function decodedBody(req: IncomingMessage): Readable {
  const enc = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (enc === "identity" || enc === "") return req;
  if (enc === "gzip" || enc === "x-gzip") return req.pipe(createGunzip()).on("error", () => {});
  throw new HttpError(400, `unsupported Content-Encoding '${enc}'`);
}
