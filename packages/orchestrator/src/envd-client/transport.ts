// Connect clients for envd's Process and Filesystem services, with the headers every call carries.
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { DEFAULT_USER, Filesystem, Process } from "@burrow/protocol";
import { envdBaseUrl, type EnvdTarget } from "./envd-target.js";

/** Seconds between envd's keepalive messages on a stream, so quiet long calls survive idle timeouts on the way. */
const KEEPALIVE_PING_INTERVAL_S = "30";

function transportFor(target: EnvdTarget) {
  // Connect+JSON over HTTP/1.1, as the official SDK speaks it: what envd must accept from the SDK it accepts from us.
  return createConnectTransport({ baseUrl: envdBaseUrl(target), httpVersion: "1.1", useBinaryFormat: false });
}

export function processClient(target: EnvdTarget): Client<typeof Process> {
  return createClient(Process, transportFor(target));
}

export function filesystemClient(target: EnvdTarget): Client<typeof Filesystem> {
  return createClient(Filesystem, transportFor(target));
}

/** Headers of an RPC: the user it acts as (envd's Basic scheme, no password) and the access token. */
export function rpcHeaders(target: EnvdTarget, user: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {
    authorization: `Basic ${Buffer.from(`${user ?? DEFAULT_USER}:`).toString("base64")}`,
    "keepalive-ping-interval": KEEPALIVE_PING_INTERVAL_S,
  };
  if (target.accessToken) headers["x-access-token"] = target.accessToken;
  return headers;
}

/** Headers of a plain HTTP call (/files, /init). */
export function tokenHeader(target: EnvdTarget): Record<string, string> {
  return target.accessToken ? { "x-access-token": target.accessToken } : {};
}
