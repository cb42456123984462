import { createHash } from "node:crypto";

export type FileOperation = "read" | "write";

/**
 * The v1 signed-URL signature: sha256 over `path:operation:user:token[:expiration]`,
 * standard base64 without padding, prefixed `v1_`. `path` is the query value as given, not resolved.
 */
export function fileSignature(path: string, operation: FileOperation, user: string, token: string, expiration?: number): string {
  const raw = expiration === undefined
    ? `${path}:${operation}:${user}:${token}`
    : `${path}:${operation}:${user}:${token}:${expiration}`;
  return "v1_" + createHash("sha256").update(raw, "utf8").digest("base64").replace(/=+$/, "");
}
