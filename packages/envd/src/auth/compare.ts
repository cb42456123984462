import { createHash, timingSafeEqual } from "node:crypto";

/** Constant-time string equality: both sides are hashed first so lengths leak nothing either. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a, "utf8").digest();
  const hb = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(ha, hb);
}
