// Plain REST calls to the E2B API, for the commands that never talk to envd (list, kill, pause, resume,
// template list/delete). Start-up is most of these commands' time: importing the `e2b` SDK costs ~250 ms of CPU
// (template builder, tar, glob, Connect-RPC) and Node's global fetch ~200 ms (its bundled undici is compiled on
// first use), while node:http is already in the binary's snapshot. Commands that run processes in a sandbox
// (create, exec, shell, template build) use the SDK.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { Code, codeFromHttpStatus } from "@burrow/protocol";
import { CliError } from "./cli-error.js";
import type { Connection } from "./connection.js";

/** Generous: these calls return in milliseconds unless the server is stuck. */
const REQUEST_TIMEOUT_MS = 60_000;

export interface ApiResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
}

export interface ApiRequestOptions {
  query?: URLSearchParams;
  body?: unknown;
  /** Non-2xx statuses the caller handles itself (e.g. 404 for "not found") instead of an error. */
  expect?: readonly number[];
  /** @default REQUEST_TIMEOUT_MS; longer for calls that wait on purpose (a node's drain). */
  timeoutMs?: number;
}

export async function apiRequest(connection: Connection, method: string, path: string, opts: ApiRequestOptions = {}): Promise<ApiResponse> {
  const url = new URL(path, connection.apiUrl);
  if (opts.query) url.search = opts.query.toString();
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const { status, headers, text } = await send(url, method, {
    "x-api-key": connection.apiKey,
    ...(payload !== undefined ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) } : {}),
  }, payload, opts.timeoutMs ?? REQUEST_TIMEOUT_MS).catch((error: NodeJS.ErrnoException) => {
    throw new CliError(Code.Unavailable, `cannot reach the API at ${connection.apiUrl} (${error.code ?? error.message}); is 'burrow up' running?`, {
      reason: "api_unreachable",
      cause: error,
    });
  });
  let body: unknown = undefined;
  if (text !== "") {
    try {
      body = JSON.parse(text) as unknown;
    } catch {
      body = text; // not JSON: keep the raw text for the error message
    }
  }
  if ((status < 200 || status > 299) && !opts.expect?.includes(status)) {
    // E2B's error shape is {"code": <status>, "message": "..."}.
    const message = typeof body === "object" && body !== null && "message" in body ? String(body.message) : text;
    throw new CliError(codeFromHttpStatus(status), `${method} ${path} failed (${status}): ${message}`);
  }
  return { status, headers, body };
}

async function send(url: URL, method: string, headers: Record<string, string>, payload: string | undefined, timeoutMs: number) {
  // node:https loads TLS: only when the URL asks for it.
  const request = url.protocol === "https:" ? (await import("node:https")).request : httpRequest;
  return new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = request(url, { method, headers, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(payload);
  });
}
