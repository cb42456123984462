import type { IncomingMessage } from "node:http";
import type { EnvdContext } from "../context.js";
import { checkFileAccess } from "../auth/access.js";
import type { FileOperation } from "../auth/signature.js";
import { resolveUserPath } from "../filesystem/paths.js";
import { resolveRequestUser } from "../users/request-user.js";
import type { SandboxUser } from "../users/user-db.js";

export interface FileRequest {
  user: SandboxUser;
  /** The raw `path` query value, or null when absent. */
  rawPath: string | null;
}

/** Authorizes a /files request (token header or v1 signature) and resolves its user. */
export function authorizeFileRequest(env: EnvdContext, req: IncomingMessage, url: URL, op: FileOperation): FileRequest {
  const rawPath = url.searchParams.get("path");
  const username = url.searchParams.get("username") ?? "";
  const header = req.headers["x-access-token"];
  checkFileAccess({
    token: env.state.accessToken,
    header: Array.isArray(header) ? header[0] : header,
    path: rawPath ?? "",
    username,
    operation: op,
    signature: url.searchParams.get("signature"),
    signatureExpiration: url.searchParams.get("signature_expiration"),
    nowSeconds: Math.floor(Date.now() / 1000),
  });
  // An unknown user is Unauthenticated (401), as E2B answers it.
  return { user: resolveRequestUser(env.users, env.state, username || undefined), rawPath };
}

/** A path the request names; an unusable one is InvalidArgument (400). */
export function resolveFilePath(env: EnvdContext, user: SandboxUser, raw: string): string {
  return resolveUserPath(raw, user, env.state.defaultWorkdir);
}
