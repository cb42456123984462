// Ingress rules of a sandbox's network config, for requests to its ports other than envd's (envd has its own
// access token): allowPublicTraffic false requires E2B's `e2b-traffic-access-token` header (403 without it or with
// a wrong one, in E2B's words), maskRequestHost replaces the Host header the sandbox sees, and httpsPorts says which
// ports the gateway reaches over TLS (E2B: certificates not verified, so self-signed ones work).
import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { ENVD_PORT } from "@burrow/protocol";
import { jsonAnswer } from "./responses.js";
import type { GatewayAnswer } from "./retry-answer.js";

export const TRAFFIC_TOKEN_HEADER = "e2b-traffic-access-token";

/** What the gateway needs of a sandbox's network config. */
export interface SandboxIngress {
  trafficAccessToken?: string | undefined;
  maskRequestHost?: string | undefined;
  httpsPorts?: readonly number[] | undefined;
}

/** A sandbox's ingress rules, undefined when it has none. */
export type IngressLookup = (sandboxId: string) => SandboxIngress | undefined;

/** Let the request through (with the Host header to send, when masked; over TLS for httpsPorts) or answer it. */
export type IngressDecision = { ok: true; host?: string; tls?: true } | { ok: false; answer: GatewayAnswer };

export function checkIngress(ingress: SandboxIngress | undefined, sandboxId: string, port: number, headers: IncomingHttpHeaders): IngressDecision {
  if (!ingress || port === ENVD_PORT) return { ok: true };
  const expected = ingress.trafficAccessToken;
  if (expected !== undefined) {
    const sent = headers[TRAFFIC_TOKEN_HEADER];
    const given = Array.isArray(sent) ? sent[0] : sent;
    if (!given) {
      return forbidden(sandboxId, `Sandbox is secured with traffic access token. Token header '${TRAFFIC_TOKEN_HEADER}' is missing`);
    }
    if (!sameToken(given, expected)) return forbidden(sandboxId, "Sandbox is secured with traffic access token. Provided token is invalid.");
  }
  const mask = ingress.maskRequestHost;
  const tls = ingress.httpsPorts?.includes(port) ? ({ tls: true } as const) : {};
  return mask ? { ok: true, host: mask.replaceAll("${PORT}", String(port)), ...tls } : { ok: true, ...tls };
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function forbidden(sandboxId: string, message: string): IngressDecision {
  return { ok: false, answer: jsonAnswer(403, JSON.stringify({ sandboxId, message, code: 403 })) };
}
