// A certificate authority of this host's own, kept in `<stateDir>/tls`, so that the server can answer HTTPS for
// localhost names (`https://` + getHost URLs, as E2B's docs write them). Clients trust it explicitly
// (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, curl --cacert, a browser's certificate settings); `burrow ca` prints where.
//
// Files: `ca.pem` is the CA certificate (public, what clients are given); `ca-key.pem` holds the CA's private key
// and certificate together (root only), so that creating the CA is a single atomic step. Server certificates are
// issued at every start and kept in memory only.
import { randomBytes, X509Certificate, createPrivateKey } from "node:crypto";
import { linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol/errors";
import { openssl } from "./openssl.js";

export const TLS_DIR_NAME = "tls";
/** Long-lived: every client that trusts the CA would have to be given a new one. */
const CA_VALIDITY_DAYS = 3650;
/** A server certificate is issued at every start; the most any browser accepts, should a server run that long. */
const SERVER_CERT_VALIDITY_DAYS = 397;

/**
 * What the CA may sign for. A name constraint (enforced by OpenSSL, hence Node, curl and Python, and by browsers)
 * means that a user who trusts this CA trusts it for loopback names only: should its key ever leak, it cannot be
 * used to impersonate any other site. `localhost` covers every name below it (burrow.localhost, *.burrow.localhost).
 */
const CA_NAME_CONSTRAINTS = [
  "permitted;DNS:localhost",
  "permitted;IP:127.0.0.0/255.0.0.0",
  "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
].join(",");

/** Names the server certificate is for; each must lie within CA_NAME_CONSTRAINTS. */
export interface ServerCertificateNames {
  readonly dns: readonly string[];
  readonly ips: readonly string[];
}

export interface LocalCaPaths {
  readonly dir: string;
  /** The CA certificate: what clients are told to trust. */
  readonly certFile: string;
  /** The CA's private key and certificate (mode 0600). */
  readonly keyFile: string;
}

export interface LocalCa extends LocalCaPaths {
  readonly certPem: string;
  readonly keyPem: string;
  /** Whether this call created the CA. */
  readonly created: boolean;
}

export interface ServerCertificate {
  /** Private key and certificate, PEM, for tls.createSecureContext. */
  readonly key: string;
  readonly cert: string;
  readonly validTo: Date;
}

export function localCaPaths(stateDir: string): LocalCaPaths {
  const dir = join(stateDir, TLS_DIR_NAME);
  return { dir, certFile: join(dir, "ca.pem"), keyFile: join(dir, "ca-key.pem") };
}

function pemBlock(text: string, label: string): string | undefined {
  return new RegExp(`-----BEGIN ${label}-----[A-Za-z0-9+/=\\s]+-----END ${label}-----\\n?`).exec(text)?.[0];
}

/** A unique, readable CA name, so that several Burrow CAs trusted in one browser can be told apart. */
function caCommonName(): string {
  const host = hostname().replace(/[^A-Za-z0-9.-]/g, "") || "host";
  return `Burrow local CA ${host} ${randomBytes(4).toString("hex")}`;
}

/**
 * The state directory's CA, created on first use (with openssl). Concurrent callers (a server starting while
 * `burrow ca` runs) end up with the same CA: it comes into being with one link(2), which never replaces a file.
 */
export async function ensureLocalCa(stateDir: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<LocalCa> {
  const paths = localCaPaths(stateDir);
  mkdirSync(paths.dir, { recursive: true, mode: 0o755 });
  let created = false;
  let combined = readIfExists(paths.keyFile);
  if (combined === undefined) {
    const work = mkdtempSync(join(paths.dir, ".new-ca-"));
    try {
      await openssl(
        ["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-noenc", "-keyout", "key.pem", "-out", "cert.pem",
          "-days", String(CA_VALIDITY_DAYS), "-subj", `/O=Burrow/CN=${caCommonName()}`,
          "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign",
          "-addext", `nameConstraints=critical,${CA_NAME_CONSTRAINTS}`],
        { cwd: work, signal: opts.signal },
      );
      const both = readFileSync(join(work, "key.pem"), "utf8") + readFileSync(join(work, "cert.pem"), "utf8");
      writeFileSync(join(work, "ca-key.pem"), both, { mode: 0o600 });
      try {
        linkSync(join(work, "ca-key.pem"), paths.keyFile);
        created = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    combined = readFileSync(paths.keyFile, "utf8");
  }
  const { certPem, keyPem } = checkCa(paths.keyFile, combined);
  // The public copy is (re)written whenever it is missing or not this CA's, e.g. after a restore from backup.
  if (readIfExists(paths.certFile) !== certPem) writeAtomically(paths.certFile, certPem, 0o644);
  return { ...paths, certPem, keyPem, created };
}

function checkCa(keyFile: string, combined: string): { certPem: string; keyPem: string } {
  const certPem = pemBlock(combined, "CERTIFICATE");
  const keyPem = pemBlock(combined, "PRIVATE KEY");
  const unusable = (why: string) =>
    new BurrowError(
      Code.FailedPrecondition,
      `the local CA in ${keyFile} ${why}; remove that file to create a new CA (clients must then be given the new ca.pem)`,
      { reason: "local_ca_unusable" },
    );
  if (!certPem || !keyPem) throw unusable("is not a PEM private key and certificate");
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw unusable("holds a key that does not match its certificate");
  } catch (err) {
    if (err instanceof BurrowError) throw err;
    throw unusable(`cannot be read (${(err as Error).message})`);
  }
  if (!cert.ca) throw unusable("is not a CA certificate");
  if (new Date(cert.validTo).getTime() <= Date.now()) throw unusable(`expired on ${cert.validTo}`);
  return { certPem, keyPem };
}

/** A fresh server certificate for `names`, signed by the CA; nothing of it is left on disk. */
export async function issueServerCertificate(
  ca: LocalCa,
  names: ServerCertificateNames,
  opts: { signal?: AbortSignal | undefined } = {},
): Promise<ServerCertificate> {
  const work = mkdtempSync(join(ca.dir, ".new-cert-"));
  try {
    writeFileSync(join(work, "ca-key.pem"), ca.keyPem, { mode: 0o600 });
    writeFileSync(join(work, "ca.pem"), ca.certPem);
    const altNames = [...names.dns.map((name) => `DNS:${name}`), ...names.ips.map((ip) => `IP:${ip}`)].join(",");
    await openssl(
      ["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-noenc", "-keyout", "key.pem", "-out", "cert.pem",
        "-days", String(SERVER_CERT_VALIDITY_DAYS), "-subj", `/O=Burrow/CN=${names.dns[0] ?? "localhost"}`,
        "-CA", "ca.pem", "-CAkey", "ca-key.pem",
        "-addext", `subjectAltName=${altNames}`,
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-addext", "keyUsage=critical,digitalSignature",
        "-addext", "extendedKeyUsage=serverAuth"],
      { cwd: work, signal: opts.signal },
    );
    const cert = readFileSync(join(work, "cert.pem"), "utf8");
    return { key: readFileSync(join(work, "key.pem"), "utf8"), cert, validTo: new Date(new X509Certificate(cert).validTo) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A file's text, or undefined when it does not exist (other errors are thrown). */
export function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

function writeAtomically(file: string, content: string, mode: number): void {
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    writeFileSync(tmp, content, { mode });
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}
