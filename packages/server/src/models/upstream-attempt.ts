// One try of one provider: send the buffered request with the provider's key, wait (bounded) for its response
// head, and either hand the response back as a failure that another provider may fix (connection error, timeout,
// 429, 5xx — body drained so the connection can be reused) or as the answer to stream to the caller.
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Provider } from "./provider-config.js";

/** Kept-alive connections to providers, one pool per gateway: a handshake per call would cost more than the gateway. */
export class UpstreamAgents {
  readonly http = new HttpAgent({ keepAlive: true, maxSockets: 256 });
  readonly https = new HttpsAgent({ keepAlive: true, maxSockets: 256 });

  close(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

/** Caller headers never forwarded: hop-by-hop ones, the caller's own credentials, and what the gateway sets. */
const DROPPED_REQUEST_HEADERS = new Set([
  "host", "connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding",
  "upgrade", "content-length", "authorization", "x-api-key", "cookie",
]);

const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";
/** How much of a failed attempt's body is kept (to answer it when every provider failed). */
const MAX_FAILURE_BODY = 64 * 1024;

export type AttemptResult =
  | { ok: true; response: IncomingMessage }
  | { ok: false; status: number | null; headers: IncomingHttpHeaders; body: Buffer; reason: string };

export function upstreamUrl(p: Provider, path: string, search: string): URL {
  // OpenAI-compatible base URLs include /v1 (as the OpenAI SDK's do); Anthropic's are the API root.
  const suffix = p.kind === "openai" ? path.replace(/^\/v1(?=\/|$)/, "") : path;
  return new URL(`${p.baseUrl}${suffix}${search}`);
}

export function upstreamHeaders(p: Provider, incoming: IncomingHttpHeaders, key: string | undefined, bodyLength: number): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || DROPPED_REQUEST_HEADERS.has(name)) continue;
    out[name] = value;
  }
  out["content-length"] = String(bodyLength);
  if (p.kind === "anthropic") {
    if (key !== undefined) out["x-api-key"] = key;
    out["anthropic-version"] ??= DEFAULT_ANTHROPIC_VERSION;
  } else if (key !== undefined) {
    out["authorization"] = `Bearer ${key}`;
  }
  return out;
}

export function attemptUpstream(
  agents: UpstreamAgents,
  opts: { method: string; url: URL; headers: Record<string, string | string[]>; body: Buffer; timeoutMs: number; signal: AbortSignal },
): Promise<AttemptResult> {
  return new Promise((resolve) => {
    const https = opts.url.protocol === "https:";
    const send = https ? httpsRequest : httpRequest;
    let settled = false;
    const fail = (status: number | null, headers: IncomingHttpHeaders, body: Buffer, reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ok: false, status, headers, body, reason });
    };
    const req = send(opts.url, { method: opts.method, headers: opts.headers, agent: https ? agents.https : agents.http, signal: opts.signal });
    const timer = setTimeout(() => {
      fail(null, {}, Buffer.alloc(0), `no answer within ${opts.timeoutMs} ms`);
      req.destroy();
    }, opts.timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) => fail(null, {}, Buffer.alloc(0), err.code ?? err.message));
    req.on("response", (res) => {
      if (settled) {
        res.destroy();
        return;
      }
      const status = res.statusCode ?? 502;
      if (status !== 429 && status < 500) {
        settled = true;
        clearTimeout(timer);
        resolve({ ok: true, response: res });
        return;
      }
      // A retryable answer: read it (bounded) so it can be answered if no other provider does better.
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        if (size < MAX_FAILURE_BODY) chunks.push(c);
        size += c.length;
      });
      res.on("end", () => fail(status, res.headers, Buffer.concat(chunks).subarray(0, MAX_FAILURE_BODY), `HTTP ${status}`));
      res.on("error", () => fail(status, res.headers, Buffer.concat(chunks), `HTTP ${status}`));
    });
    req.end(opts.body);
  });
}
