// Where a request's API key comes from. The SDK sends `X-API-KEY`; other clients may prefer a bearer token.
import type { IncomingHttpHeaders } from "node:http";

/** The API key a request presents, or undefined. Node lower-cases header names, so this is case-insensitive. */
export function apiKeyFromHeaders(headers: IncomingHttpHeaders): string | undefined {
  const xApiKey = headers["x-api-key"];
  const direct = Array.isArray(xApiKey) ? xApiKey[0] : xApiKey;
  if (direct) return direct.trim() || undefined;
  const authorization = headers.authorization;
  if (!authorization) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1];
}
