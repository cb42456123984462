// The cluster's secret, from which every node derives the key it signs forwarded requests with
// (forwarded-header.ts). Made once, by the first node that finds none, with a create that fails when the key exists
// (two nodes starting at once: one's value wins, the other reads it). It lives in the cluster's NATS (whoever can read
// the buckets is inside the cluster anyway) and is never logged nor returned by any route.
import { hkdfSync, randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { isRevisionConflict } from "./cluster-errors.js";
import { checkedCreate } from "./cluster-kv.js";

/** The key of the secret in the cluster's settings bucket. */
export const FORWARD_SECRET_KEY = "forward-secret";

const KEY_INFO = "burrow forwarded-by v1";

/** The signing key: the secret is used only through a derivation, so other purposes can derive their own. */
export function deriveForwardKey(secret: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), KEY_INFO, 32));
}

export async function loadForwardKey(settings: KV): Promise<Buffer> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const entry = await settings.get(FORWARD_SECRET_KEY);
    if (entry?.operation === "PUT" && entry.value.length > 0) return deriveForwardKey(Buffer.from(entry.value));
    try {
      const secret = randomBytes(32);
      await checkedCreate(settings, FORWARD_SECRET_KEY, secret);
      return deriveForwardKey(secret);
    } catch (err) {
      // Another node made it first: read theirs.
      if (!isRevisionConflict(err)) throw err;
    }
  }
  throw new Error("the cluster's forwarding secret kept changing while it was read");
}
