// Request bodies: JSON objects of bounded size.
import type { IncomingMessage } from "node:http";
import { CodeInterpreterError } from "../errors.js";

/** Cells can be large (generated code, embedded data); anything beyond this is refused. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

export class BodyError extends Error {
  override readonly name = "BodyError";
}

export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.destroy();
      throw new CodeInterpreterError("resource_exhausted", `request body larger than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new BodyError(`body is not valid JSON: ${(error as Error).message}`);
  }
}
