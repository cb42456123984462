// Node can make keys but not X.509 certificates, so the local CA and its server certificates are made by the
// openssl command (Debian's `openssl` package, which `npm start` installs).
import { execFile } from "node:child_process";
import { BurrowError, Code } from "@burrow/protocol/errors";

/** Generous for two EC key generations on a loaded machine; openssl needs a few milliseconds. */
const OPENSSL_TIMEOUT_MS = 30_000;

/** Run `openssl <args>` in `cwd`; failures are BurrowErrors that quote openssl's own message. */
export function openssl(args: readonly string[], opts: { cwd: string; signal?: AbortSignal | undefined }): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      "openssl",
      [...args],
      // No configuration file (the system's, or one in the user's OPENSSL_CONF) may add to what is made here.
      { cwd: opts.cwd, timeout: OPENSSL_TIMEOUT_MS, signal: opts.signal, env: { ...process.env, OPENSSL_CONF: "/dev/null" } },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        if ((err as NodeJS.ErrnoException).code === "ENOENT") {
          reject(new BurrowError(Code.FailedPrecondition, "the openssl command is not installed (apt-get install openssl)", { cause: err, reason: "openssl_missing" }));
        } else if (err.name === "AbortError") {
          reject(new BurrowError(Code.Canceled, "openssl was cancelled", { cause: err }));
        } else {
          const detail = stderr.trim().split("\n").filter((line) => line && !line.startsWith("-")).slice(-3).join("; ");
          reject(new BurrowError(Code.Internal, `openssl ${args[0]} failed: ${detail || err.message}`, { cause: err, reason: "openssl_failed" }));
        }
      },
    );
  });
}
