// Which sandbox (and port) a request is for, decided from the request line and headers alone:
//   1. `E2b-Sandbox-Id` (+ `E2b-Sandbox-Port`, default 49983) — what the SDK sends with every envd call;
//   2. Host `<port>-<sandboxId>.<any domain>` — `sandbox.getHost(port)` URLs;
//   3. `/files?…signature=…` without either — signed upload/download URLs, matched by recomputing the signature
//      with each live sandbox's token (an expired but otherwise valid signature still matches, so that envd
//      answers its exact "signature is already expired" 401).
// Anything else belongs to the REST API.
import type { IncomingHttpHeaders } from "node:http";
import { ENVD_PORT } from "@burrow/protocol";
import { fileSignature, signaturesEqual } from "./signature.js";

export type RouteVia = "header" | "host" | "signature";

export type GatewayRoute =
  | { kind: "api" }
  | { kind: "sandbox"; sandboxId: string; port: number; via: RouteVia }
  /** Addressed to a sandbox, but unusable (bad port…): answered 400 by the gateway. */
  | { kind: "invalid"; message: string }
  /** A signed /files URL that no live sandbox signed: answered 502 like any gone sandbox. */
  | { kind: "unmatched"; via: RouteVia };

export interface RoutableRequest {
  method?: string | undefined;
  url?: string | undefined;
  headers: IncomingHttpHeaders;
}

export interface SandboxToken {
  sandboxId: string;
  envdAccessToken: string;
}

const HOST_PATTERN = /^(\d{1,5})-([a-z0-9]+)\./;

function parsePort(value: string): number | undefined {
  if (!/^\d{1,5}$/.test(value)) return undefined;
  const port = Number(value);
  return port >= 1 && port <= 65_535 ? port : undefined;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function routeRequest(req: RoutableRequest, liveTokens: () => Iterable<SandboxToken>): GatewayRoute {
  const headerId = single(req.headers["e2b-sandbox-id"])?.trim();
  if (headerId) {
    const rawPort = single(req.headers["e2b-sandbox-port"])?.trim();
    const port = rawPort ? parsePort(rawPort) : ENVD_PORT;
    if (port === undefined) return { kind: "invalid", message: `invalid E2b-Sandbox-Port "${rawPort}"` };
    return { kind: "sandbox", sandboxId: headerId, port, via: "header" };
  }

  const host = single(req.headers.host)?.toLowerCase();
  const hostMatch = host ? HOST_PATTERN.exec(host) : null;
  if (hostMatch) {
    const port = parsePort(hostMatch[1]!);
    if (port === undefined) return { kind: "invalid", message: `invalid port in host "${host}"` };
    return { kind: "sandbox", sandboxId: hostMatch[2]!, port, via: "host" };
  }

  return routeBySignature(req, liveTokens) ?? { kind: "api" };
}

function routeBySignature(req: RoutableRequest, liveTokens: () => Iterable<SandboxToken>): GatewayRoute | undefined {
  const operation = req.method === "GET" || req.method === "HEAD" ? "read" : req.method === "POST" ? "write" : undefined;
  if (!operation || !req.url?.startsWith("/files")) return undefined;
  let url: URL;
  try {
    url = new URL(req.url, "http://gateway.invalid");
  } catch {
    return undefined;
  }
  const signature = url.searchParams.get("signature");
  if (url.pathname !== "/files" || !signature) return undefined;
  const expiration = url.searchParams.get("signature_expiration");
  const base = {
    path: url.searchParams.get("path") ?? "",
    operation,
    username: url.searchParams.get("username") ?? "",
    ...(expiration !== null ? { expiration } : {}),
  } as const;
  for (const { sandboxId, envdAccessToken } of liveTokens()) {
    if (signaturesEqual(signature, fileSignature({ ...base, envdAccessToken }))) {
      return { kind: "sandbox", sandboxId, port: ENVD_PORT, via: "signature" };
    }
  }
  return { kind: "unmatched", via: "signature" };
}
