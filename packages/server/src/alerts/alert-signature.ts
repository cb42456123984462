// Webhook signatures: `Burrow-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. The
// timestamp is signed with the body so that a receiver can refuse old deliveries (replays) as well as forged ones.
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "burrow-signature";

export function signatureHeader(secret: string, body: string, nowSec = Math.floor(Date.now() / 1000)): string {
  return `t=${nowSec},v1=${createHmac("sha256", secret).update(`${nowSec}.${body}`).digest("hex")}`;
}

/** Whether `header` signs `body` with `secret` within `toleranceSec` of now (what a receiver does). */
export function verifySignature(secret: string, body: string, header: string, toleranceSec = 300, nowSec = Math.floor(Date.now() / 1000)): boolean {
  const parts = Object.fromEntries(header.split(",").map((p) => p.split("=", 2) as [string, string]));
  const t = Number(parts["t"]);
  if (!Number.isInteger(t) || Math.abs(nowSec - t) > toleranceSec || !parts["v1"]) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${t}.${body}`).digest("hex"));
  const given = Buffer.from(parts["v1"]);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
