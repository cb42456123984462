import { gunzipSync, gzipSync } from "node:zlib";
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { envelopePb, BurrowError, Code } from "@burrow/protocol";
import type { AgentKey } from "./agent-key.js";
import { signingBytes } from "./canonical.js";

export const ENVELOPE_VERSION = 1;
export const DEFAULT_COMPRESS_THRESHOLD_BYTES = 1024;
export const DEFAULT_MAX_HOPS = 8;
export const DEFAULT_TTL_MS = 5 * 60_000;
// Bounds what a (signed) compressed payload may expand to, so a small message cannot exhaust memory.
export const MAX_DECOMPRESSED_BYTES = 16 * 1024 * 1024;

export type Route =
  | { type: "direct"; to: string }
  | { type: "broadcast"; topic: string }
  | { type: "multicast"; group: string; topic?: string };

export interface SealOptions {
  messageId?: string;
  contentType?: string;
  /** @default 300000 */
  ttlMs?: number;
  /** @default 8 */
  maxHops?: number;
  /** 0–9, higher first. @default 0 */
  priority?: number;
  headers?: Record<string, string>;
  traceparent?: string;
  tracestate?: string;
  /** Payloads larger than this are gzip-compressed. @default 1024 */
  compressThresholdBytes?: number;
  /** Clock for tests. */
  now?: number;
}

const routeType = {
  direct: envelopePb.RouteType.DIRECT,
  broadcast: envelopePb.RouteType.BROADCAST,
  multicast: envelopePb.RouteType.MULTICAST,
} as const;

/** Builds and signs an envelope from `key`'s agent. */
export function sealEnvelope(key: AgentKey, route: Route, payload: Uint8Array, opts: SealOptions = {}): envelopePb.Envelope {
  const priority = opts.priority ?? 0;
  if (!Number.isInteger(priority) || priority < 0 || priority > 9) throw new BurrowError(Code.InvalidArgument, "priority is 0–9");
  const threshold = opts.compressThresholdBytes ?? DEFAULT_COMPRESS_THRESHOLD_BYTES;
  const compressed = payload.length > threshold;
  const e = create(envelopePb.EnvelopeSchema, {
    version: ENVELOPE_VERSION,
    messageId: opts.messageId ?? randomUUID(),
    timestampMs: BigInt(opts.now ?? Date.now()),
    sourceAgent: key.agentId,
    target: route.type === "direct" ? route.to : route.type === "broadcast" ? route.topic : (route.topic ?? ""),
    routeType: routeType[route.type],
    group: route.type === "multicast" ? route.group : "",
    ttlMs: opts.ttlMs ?? DEFAULT_TTL_MS,
    hopCount: 0,
    maxHops: opts.maxHops ?? DEFAULT_MAX_HOPS,
    hops: [],
    priority,
    headers: { ...(opts.headers ?? {}) },
    traceparent: opts.traceparent ?? "",
    tracestate: opts.tracestate ?? "",
    contentType: opts.contentType ?? "application/octet-stream",
    compressed,
    payload: compressed ? new Uint8Array(gzipSync(payload)) : payload,
    keyId: key.keyId,
  });
  e.signature = key.sign(signingBytes(e));
  return e;
}

export function encodeEnvelope(e: envelopePb.Envelope): Uint8Array {
  return toBinary(envelopePb.EnvelopeSchema, e);
}

export function decodeEnvelope(bytes: Uint8Array): envelopePb.Envelope {
  try {
    return fromBinary(envelopePb.EnvelopeSchema, bytes);
  } catch (e) {
    throw new BurrowError(Code.InvalidArgument, "malformed envelope", { reason: "malformed", cause: e });
  }
}

/** The payload as the sender gave it (decompressed). Call after verification. */
export function envelopePayload(e: envelopePb.Envelope): Uint8Array {
  if (!e.compressed) return e.payload;
  try {
    return new Uint8Array(gunzipSync(e.payload, { maxOutputLength: MAX_DECOMPRESSED_BYTES }));
  } catch (err) {
    throw new BurrowError(Code.InvalidArgument, "payload does not decompress", { reason: "malformed", cause: err });
  }
}

export function routeOf(e: envelopePb.Envelope): Route {
  switch (e.routeType) {
    case envelopePb.RouteType.DIRECT:
      return { type: "direct", to: e.target };
    case envelopePb.RouteType.BROADCAST:
      return { type: "broadcast", topic: e.target };
    case envelopePb.RouteType.MULTICAST:
      return { type: "multicast", group: e.group, ...(e.target ? { topic: e.target } : {}) };
    default:
      throw new BurrowError(Code.InvalidArgument, "envelope has no route type", { reason: "malformed" });
  }
}
