// A create sent on to the node placement chose: the same method, path and body (as parsed: validation only ever
// adds defaults the receiving node would add too) with the caller's headers, marked forwarded (signed) so that the node
// creates it itself. Its answer comes back as it was given: status, body and the headers that describe them.
import type { FastifyRequest } from "fastify";
import type { ForwardSigning } from "./forwarded-header.js";

export type ForwardedAnswer =
  | { kind: "answer"; status: number; headers: Record<string, string>; body: string }
  /** No connection to the node: it never saw the create, so another node may make it. */
  | { kind: "unreachable"; error: string }
  /** The connection broke after the create was sent: the node may have made the sandbox, so no other node may. */
  | { kind: "interrupted"; error: string };

/** Errors of the connect phase (undici's cause codes): the request never left this node. */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

/** Headers of the connection or of a body that is re-encoded: not passed either way. */
const HOP_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "upgrade", "expect", "content-encoding", "accept-encoding"]);

export async function forwardCreate(node: string, apiUrl: string, signing: ForwardSigning, request: FastifyRequest, signal: AbortSignal): Promise<ForwardedAnswer> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || HOP_HEADERS.has(name)) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  headers.set("content-type", "application/json");
  for (const [name, value] of Object.entries(signing.headers("POST", request.url, node))) headers.set(name, value);
  try {
    const res = await fetch(`${apiUrl}${request.url}`, { method: "POST", headers, body: JSON.stringify(request.body ?? {}), signal });
    const body = await res.text();
    const passed: Record<string, string> = {};
    res.headers.forEach((value, name) => {
      if (!HOP_HEADERS.has(name) && name !== "date") passed[name] = value;
    });
    return { kind: "answer", status: res.status, headers: passed, body };
  } catch (err) {
    if (signal.aborted) throw err;
    const cause = (err as { cause?: { code?: string } }).cause;
    const error = cause?.code ?? (err instanceof Error ? err.message : String(err));
    return { kind: cause?.code !== undefined && NOT_CONNECTED.has(cause.code) ? "unreachable" : "interrupted", error };
  }
}
