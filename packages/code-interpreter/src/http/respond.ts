// Answers of the execution server. Errors are plain text, as E2B's server sends them (the SDKs read the body as
// text for 404 and 502); an error's code maps to its status here.
import type { ServerResponse } from "node:http";
import { BurrowError, httpStatusFromCode } from "@burrow/protocol/errors";

export function sendText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** FastAPI's validation error shape (422), which E2B's server answers for malformed bodies. */
export function sendValidationError(res: ServerResponse, field: string, msg: string, type: string): void {
  sendJson(res, 422, { detail: [{ loc: field ? ["body", field] : ["body"], msg, type }] });
}

export function sendError(res: ServerResponse, error: unknown): void {
  if (error instanceof BurrowError) sendText(res, httpStatusFromCode(error.code), error.message);
  else sendText(res, 500, error instanceof Error ? error.message : "internal error");
}
