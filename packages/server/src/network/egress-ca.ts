// The CA the egress proxy issues certificates with when it terminates a sandbox's TLS to a host with header
// transforms. One per instance, created once in `<stateDir>/egress-ca` with openssl (like the server's own local CA in
// ../tls, whose leaf issuing it reuses), and trusted by every sandbox. Unlike the server's local CA it cannot carry
// name constraints: it must sign for whatever hosts rules name. Its key never leaves the host; sandboxes get the
// certificate only.
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes, X509Certificate } from "node:crypto";
import { join } from "node:path";
import { issueServerCertificate, readIfExists, type LocalCa } from "../tls/index.js";
import { openssl } from "../tls/openssl.js";

const DIR_NAME = "egress-ca";
const CA_VALIDITY_DAYS = 3650;
/** Leaf certificates issued and kept in memory; more hosts than this and the oldest are issued again when needed. */
const MAX_CACHED_LEAVES = 1000;

export interface EgressCa {
  /** The CA certificate (PEM): what sandboxes trust. */
  readonly certPem: string;
  /** Key and certificate for `host`, cached per host. */
  certificateFor(host: string): Promise<{ key: string; cert: string }>;
}

export async function ensureEgressCa(stateDir: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<EgressCa> {
  const dir = join(stateDir, DIR_NAME);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyFile = join(dir, "ca-key.pem");
  let combined = readIfExists(keyFile);
  if (combined === undefined) {
    const work = mkdtempSync(join(dir, ".new-ca-"));
    try {
      await openssl(
        ["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-noenc", "-keyout", "key.pem", "-out", "cert.pem",
          "-days", String(CA_VALIDITY_DAYS), "-subj", `/O=Burrow/CN=Burrow egress CA ${randomBytes(4).toString("hex")}`,
          "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        { cwd: work, signal: opts.signal },
      );
      writeFileSync(join(work, "ca-key.pem"), readFileSync(join(work, "key.pem"), "utf8") + readFileSync(join(work, "cert.pem"), "utf8"), { mode: 0o600 });
      // One link(2): two servers starting on one state dir end up with the same CA.
      try {
        linkSync(join(work, "ca-key.pem"), keyFile);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    combined = readFileSync(keyFile, "utf8");
  }
  const certPem = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n?/.exec(combined)?.[0];
  const keyPem = /-----BEGIN PRIVATE KEY-----[^-]+-----END PRIVATE KEY-----\n?/.exec(combined)?.[0];
  if (!certPem || !keyPem || !new X509Certificate(certPem).ca) throw new Error(`${keyFile} is not a CA key and certificate; remove it to create a new one`);
  const ca: LocalCa = { dir, certFile: join(dir, "ca.pem"), keyFile, certPem, keyPem, created: false };
  const leaves = new Map<string, Promise<{ key: string; cert: string }>>();
  return {
    certPem,
    certificateFor(host) {
      let leaf = leaves.get(host);
      if (!leaf) {
        if (leaves.size >= MAX_CACHED_LEAVES) leaves.delete(leaves.keys().next().value!);
        leaf = issueServerCertificate(ca, { dns: [host], ips: [] });
        leaves.set(host, leaf);
        // A failed issue is not remembered.
        leaf.catch(() => leaves.delete(host));
      }
      return leaf;
    },
  };
}
