// The v1 file-URL signature, recomputed here only to find which sandbox a headerless
// signed URL belongs to. envd itself checks the signature and its expiry.
import { createHash, timingSafeEqual } from "node:crypto";

export interface FileSignatureInput {
  /** The `path` query parameter exactly as given ('' when absent). */
  path: string;
  operation: "read" | "write";
  /** The `username` query parameter ('' when absent). */
  username: string;
  envdAccessToken: string;
  /** The `signature_expiration` query parameter, verbatim, when present. */
  expiration?: string;
}

export function fileSignature(input: FileSignatureInput): string {
  let raw = `${input.path}:${input.operation}:${input.username}:${input.envdAccessToken}`;
  if (input.expiration !== undefined) raw += `:${input.expiration}`;
  return `v1_${createHash("sha256").update(raw, "utf8").digest("base64").replace(/=+$/, "")}`;
}

/** Constant-time: a timing oracle here would let a caller forge signatures one character at a time. */
export function signaturesEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(expected, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}
