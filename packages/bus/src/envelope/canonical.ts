import type { envelopePb } from "@burrow/protocol";

const enc = new TextEncoder();
const DOMAIN = enc.encode("burrow.bus.v1.Envelope\n");

/**
 * The bytes an envelope's signature covers: a domain tag, then each signed field length-prefixed in a fixed order,
 * headers sorted by name. Built by hand rather than re-serialising protobuf, whose byte output is not canonical.
 * `hop_count` and `hops` are excluded because relays append to them; limits on them are checked separately.
 */
export function signingBytes(e: envelopePb.Envelope): Uint8Array {
  const parts: Uint8Array[] = [DOMAIN];
  const str = (s: string) => bytes(enc.encode(s));
  const bytes = (b: Uint8Array) => {
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, b.length);
    parts.push(len, b);
  };
  const num = (n: number | bigint) => str(String(n));
  num(e.version);
  str(e.messageId);
  num(e.timestampMs);
  str(e.sourceAgent);
  str(e.target);
  num(e.routeType);
  str(e.group);
  num(e.ttlMs);
  num(e.maxHops);
  num(e.priority);
  const keys = Object.keys(e.headers).sort();
  num(keys.length);
  for (const k of keys) {
    str(k);
    str(e.headers[k]!);
  }
  str(e.traceparent);
  str(e.tracestate);
  str(e.contentType);
  num(e.compressed ? 1 : 0);
  bytes(e.payload);
  str(e.keyId);
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
