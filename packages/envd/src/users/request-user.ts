import { BurrowError, Code } from "@burrow/protocol/errors";
import type { EnvdState } from "../state.js";
import type { SandboxUser, UserDb } from "./user-db.js";

/** A request names a user that does not exist in the sandbox's /etc/passwd: E2B answers 401 (Unauthenticated). */
function unknownUserError(username: string): BurrowError {
  return new BurrowError(Code.Unauthenticated, `user '${username}' not found`, { reason: "unknown_user", details: { username } });
}

/** Resolves the user a request runs as: the given name, else /init's defaultUser (normally `user`). */
export function resolveRequestUser(users: UserDb, state: EnvdState, name: string | undefined): SandboxUser {
  const wanted = name || state.defaultUser;
  const user = users.lookup(wanted);
  if (!user) throw unknownUserError(wanted);
  return user;
}

/** `Authorization: Basic base64("<user>:")` → user name; anything else → undefined (use the default user). */
export function userFromBasicAuth(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m?.[1]) return undefined;
  const decoded = Buffer.from(m[1], "base64").toString("utf8");
  const name = decoded.split(":")[0];
  return name || undefined;
}
