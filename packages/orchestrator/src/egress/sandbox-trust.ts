// Sandboxes trust the CA the egress proxy terminates TLS with (header transforms): it is added to the system store
// at claim and named by the variables the common TLS stacks read, as defaults the caller's env vars may override.
// Every sandbox gets it, since rules can be given to a running sandbox by a network update.
import { runProcess, type EnvdTarget } from "../envd-client/index.js";

/** The CA alone, for NODE_EXTRA_CA_CERTS (which adds to Node's bundled store). */
export const SANDBOX_CA_FILE = "/etc/ssl/certs/burrow-egress-ca.pem";
/** Debian's system bundle (OpenSSL's default file), which curl and Python's ssl read; the CA is appended to it. */
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

/** Env vars naming the trusted CAs; undefined without a CA. */
export function trustEnv(caPem: string | undefined): Record<string, string> {
  if (caPem === undefined) return {};
  return { NODE_EXTRA_CA_CERTS: SANDBOX_CA_FILE, SSL_CERT_FILE: SYSTEM_BUNDLE, REQUESTS_CA_BUNDLE: SYSTEM_BUNDLE };
}

/** Write the CA into the sandbox's system store (as root; idempotent, so a claim retried does not append it twice). */
export async function installSandboxCa(target: EnvdTarget, caPem: string, signal?: AbortSignal): Promise<void> {
  const script = [
    "set -e",
    `mkdir -p /etc/ssl/certs`,
    `printf '%s\\n' "$BURROW_CA" > ${SANDBOX_CA_FILE}`,
    `grep -qF "$(sed -n 2p ${SANDBOX_CA_FILE})" ${SYSTEM_BUNDLE} 2>/dev/null || cat ${SANDBOX_CA_FILE} >> ${SYSTEM_BUNDLE}`,
  ].join("\n");
  const result = await runProcess(target, { cmd: "/bin/sh", args: ["-c", script], user: "root", envs: { BURROW_CA: caPem.trim() }, signal });
  if (result.exitCode !== 0) throw new Error(`installing the egress CA in the sandbox failed: ${result.status}`);
}
