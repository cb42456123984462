import { isAbsolute, join, resolve } from "node:path";
import { BurrowError, Code } from "@burrow/protocol/errors";
import type { SandboxUser } from "../users/user-db.js";

/** A path that cannot name a file (NUL byte, absurd length). */
function invalidPath(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_path" });
}

/**
 * Resolves a client path the way envd does: `~` and relative paths against the user's home, an empty path to
 * the default workdir (else home). `..` is normalised away; inside the sandbox every absolute path is legitimate,
 * so there is nothing to escape from, but the result is always a clean absolute path.
 */
export function resolveUserPath(raw: string, user: SandboxUser, defaultWorkdir?: string): string {
  if (raw.includes("\0")) throw invalidPath("path contains a NUL byte");
  if (raw.length > 4096) throw invalidPath("path is too long");
  if (raw === "") return resolve(defaultWorkdir || user.home);
  if (raw === "~") return resolve(user.home);
  if (raw.startsWith("~/")) return resolve(join(user.home, raw.slice(2)));
  if (isAbsolute(raw)) return resolve(raw);
  return resolve(user.home, raw);
}
