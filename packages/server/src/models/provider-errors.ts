// Errors the gateway itself answers, in the shape of the API the caller speaks, so that the vendor's SDK in the
// sandbox raises its usual exception (OpenAI's RateLimitError, Anthropic's RateLimitError, …).
import type { ServerResponse } from "node:http";
import type { ProviderKind } from "./provider-config.js";

const OPENAI_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "invalid_request_error",
  404: "invalid_request_error",
  413: "invalid_request_error",
  429: "rate_limit_exceeded",
  502: "server_error",
  503: "server_error",
};

const ANTHROPIC_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  502: "api_error",
  503: "overloaded_error",
};

export function providerErrorBody(kind: ProviderKind, status: number, message: string, code?: string): string {
  if (kind === "anthropic") return JSON.stringify({ type: "error", error: { type: ANTHROPIC_TYPES[status] ?? "api_error", message } });
  return JSON.stringify({ error: { message, type: OPENAI_TYPES[status] ?? "server_error", param: null, code: code ?? null } });
}

export function sendProviderError(res: ServerResponse, kind: ProviderKind, status: number, message: string, opts: { code?: string; retryAfterSec?: number } = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = providerErrorBody(kind, status, message, opts.code);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(opts.retryAfterSec !== undefined ? { "retry-after": String(opts.retryAfterSec) } : {}),
  });
  res.end(body);
}

/**
 * The event that ends an SSE stream whose provider broke off after bytes were sent: the client's SDK raises it as an
 * API error instead of taking a truncated answer for a complete one.
 */
export function midStreamErrorEvent(kind: ProviderKind, message: string): string {
  if (kind === "anthropic") return `event: error\ndata: ${providerErrorBody("anthropic", 502, message)}\n\n`;
  return `data: ${providerErrorBody("openai", 502, message)}\n\n`;
}
