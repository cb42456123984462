import { isAbsolute, join, resolve } from "node:path";
import type { SandboxUser } from "../users/user-db.js";

/** A path that cannot name a file (NUL byte, absurd length). */
export class InvalidPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidPathError";
  }
}

/**
 * Resolves a client path the way envd does: `~` and relative paths against the user's home, an empty path to
 * the default workdir (else home). `..` is normalised away; inside the sandbox every absolute path is legitimate,
 * so there is nothing to escape from, but the result is always a clean absolute path.
 */
export function resolveUserPath(raw: string, user: SandboxUser, defaultWorkdir?: string): string {
  if (raw.includes("\0")) throw new InvalidPathError("path contains a NUL byte");
  if (raw.length > 4096) throw new InvalidPathError("path is too long");
  if (raw === "") return resolve(defaultWorkdir || user.home);
  if (raw === "~") return resolve(user.home);
  if (raw.startsWith("~/")) return resolve(join(user.home, raw.slice(2)));
  if (isAbsolute(raw)) return resolve(raw);
  return resolve(user.home, raw);
}
