// Request bodies: JSON objects of bounded size.
import type { IncomingMessage } from "node:http";
import { BurrowError, Code } from "@burrow/protocol/errors";

/** Cells can be large (generated code, embedded data); anything beyond this is refused. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** The reason of a body that is not JSON (InvalidArgument), which routes answer in FastAPI's validation shape. */
export const INVALID_JSON = "invalid_json";

export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.destroy();
      throw new BurrowError(Code.ResourceExhausted, `request body larger than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new BurrowError(Code.InvalidArgument, `body is not valid JSON: ${(error as Error).message}`, { reason: INVALID_JSON, cause: error });
  }
}
