// Sandboxes trust the CA the egress proxy terminates TLS with (header transforms): it is added to the system store
// (written into the writable layer at launch, writeTrustedCa; through envd at claim only for a sandbox launched
// before the CA was known, installSandboxCa) and named by the variables the common TLS stacks read, as defaults the
// caller's env vars may override. Every sandbox gets it, since rules can be given to a running sandbox by a network
// update.
import { existsSync } from "node:fs";
import { chown, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runProcess, type EnvdTarget } from "../envd-client/index.js";

/** The CA alone, for NODE_EXTRA_CA_CERTS (which adds to Node's bundled store). */
export const SANDBOX_CA_FILE = "/etc/ssl/certs/burrow-egress-ca.pem";
/** Debian's system bundle (OpenSSL's default file), which curl and Python's ssl read; the CA is appended to it. */
export const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

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

/** Bundles made (system bundle of a template's layers + the CA), by CA and layers; a few templates, 200 KB each. */
const bundles = new Map<string, Promise<string>>();
const MAX_BUNDLES = 32;

/**
 * Put the CA into a sandbox's writable layer before it starts (host-side, so no claim waits for it): the CA file and
 * the template's system bundle with the CA appended, owned by the sandbox's root. `layers` are the template's layer
 * directories, top first; the first holding the system bundle is the one the sandbox would see.
 */
export async function writeTrustedCa(upper: string, caPem: string, layers: readonly string[], uid: number): Promise<void> {
  const key = `${caPem}\0${layers.join("\0")}`;
  let bundle = bundles.get(key);
  if (!bundle) {
    if (bundles.size >= MAX_BUNDLES) bundles.delete(bundles.keys().next().value!);
    bundle = systemBundleOf(layers).then((system) => `${system}${system === "" || system.endsWith("\n") ? "" : "\n"}${caPem.trim()}\n`);
    bundles.set(key, bundle);
    bundle.catch(() => bundles.delete(key));
  }
  const certs = join(upper, SANDBOX_CA_FILE, "..");
  await mkdir(certs, { recursive: true });
  await Promise.all([writeFile(join(upper, SANDBOX_CA_FILE), `${caPem.trim()}\n`), writeFile(join(upper, SYSTEM_BUNDLE), await bundle)]);
  const dirs = [join(upper, "etc/ssl"), certs];
  await Promise.all([...dirs, join(upper, SANDBOX_CA_FILE), join(upper, SYSTEM_BUNDLE)].map((p) => chown(p, uid, uid)));
}

/** Whether a sandbox's writable layer has the CA (written by writeTrustedCa at launch). */
export function hasTrustedCa(upper: string): boolean {
  return existsSync(join(upper, SANDBOX_CA_FILE));
}

async function systemBundleOf(layers: readonly string[]): Promise<string> {
  for (const layer of layers) {
    try {
      return await readFile(join(layer, SYSTEM_BUNDLE), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  return "";
}
