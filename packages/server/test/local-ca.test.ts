// The state directory's local CA (tls/local-ca.ts), made by the real openssl: created once and reused (also by
// concurrent callers), files and modes, server certificates for the local names, and the name constraint that
// keeps the CA from vouching for any other site.
import { spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { ensureLocalCa, issueServerCertificate, LOCAL_CERTIFICATE_NAMES, localCaPaths } from "../src/tls/index.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "burrow-local-ca-"));
  dirs.push(dir);
  return dir;
}

describe("local CA", () => {
  it("is created once, with a public certificate and a private key file, and reused", async () => {
    const dir = stateDir();
    const first = await ensureLocalCa(dir);
    expect(first).toMatchObject({ created: true, ...localCaPaths(dir) });
    expect(statSync(first.certFile).mode & 0o777).toBe(0o644);
    expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
    const cert = new X509Certificate(readFileSync(first.certFile));
    expect(cert.ca).toBe(true);
    expect(cert.subject).toMatch(/CN=Burrow local CA /);

    const again = await ensureLocalCa(dir);
    expect(again.created).toBe(false);
    expect(again.certPem).toBe(first.certPem);
    // No working files are left behind.
    expect(readdir(join(dir, "tls"))).toEqual(["ca-key.pem", "ca.pem"]);
  });

  it("gives concurrent callers the same CA", async () => {
    const dir = stateDir();
    const all = await Promise.all([1, 2, 3, 4].map(() => ensureLocalCa(dir)));
    expect(new Set(all.map((ca) => ca.certPem)).size).toBe(1);
    expect(all.filter((ca) => ca.created)).toHaveLength(1);
    expect(readFileSync(all[0]!.certFile, "utf8")).toBe(all[0]!.certPem);
  });

  it("writes the public certificate again when it is missing or replaced", async () => {
    const dir = stateDir();
    const ca = await ensureLocalCa(dir);
    unlinkSync(ca.certFile);
    await ensureLocalCa(dir);
    expect(readFileSync(ca.certFile, "utf8")).toBe(ca.certPem);
    writeFileSync(ca.certFile, "not a certificate\n");
    await ensureLocalCa(dir);
    expect(readFileSync(ca.certFile, "utf8")).toBe(ca.certPem);
  });

  it("refuses an unusable CA file with a message that says what to do", async () => {
    const dir = stateDir();
    const { keyFile } = await ensureLocalCa(dir);
    writeFileSync(keyFile, "garbage\n");
    await expect(ensureLocalCa(dir)).rejects.toMatchObject({
      code: Code.FailedPrecondition,
      reason: "local_ca_unusable",
      message: expect.stringContaining("remove that file to create a new CA"),
    });
    // A key of another CA next to this certificate.
    const other = await ensureLocalCa(stateDir());
    const mine = await ensureLocalCa(stateDir());
    writeFileSync(mine.keyFile, other.keyPem + mine.certPem);
    await expect(ensureLocalCa(join(mine.dir, ".."))).rejects.toThrow(/does not match its certificate/);
  });

  it("issues server certificates for the local names that clients verify against the CA", async () => {
    const ca = await ensureLocalCa(stateDir());
    const issued = await issueServerCertificate(ca, LOCAL_CERTIFICATE_NAMES);
    const cert = new X509Certificate(issued.cert);
    expect(cert.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    expect(cert.ca).toBe(false);
    for (const name of ["burrow.localhost", "8000-abc123.burrow.localhost", "localhost"]) expect(cert.checkHost(name)).toBeDefined();
    expect(cert.checkHost("example.com")).toBeUndefined();
    expect(cert.checkHost("a.b.burrow.localhost")).toBeUndefined();
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(cert.checkIP("::1")).toBe("::1");
    expect(issued.validTo.getTime()).toBeGreaterThan(Date.now() + 300 * 86_400_000);
    // Issued at every start, never written to the state directory.
    expect(readdir(ca.dir)).toEqual(["ca-key.pem", "ca.pem"]);
    expect((await handshake(issued, ca.certPem, "8000-abc123.burrow.localhost")).authorized).toBe(true);
  });

  it("cannot vouch for names outside loopback, even in a certificate it signed", async () => {
    const ca = await ensureLocalCa(stateDir());
    const issued = await issueServerCertificate(ca, { dns: ["example.com"], ips: ["192.0.2.1"] });
    expect(new X509Certificate(issued.cert).checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    const result = await handshake(issued, ca.certPem, "example.com");
    expect(result).toMatchObject({ authorized: false, error: expect.any(String) });
    // OpenSSL (which Node, curl and Python use) names the reason.
    const dir = mkdtempSync(join(tmpdir(), "burrow-local-ca-verify-"));
    dirs.push(dir);
    writeFileSync(join(dir, "leaf.pem"), issued.cert);
    const verify = spawnSync("openssl", ["verify", "-CAfile", ca.certFile, join(dir, "leaf.pem")], { encoding: "utf8" });
    expect(verify.status).not.toBe(0);
    expect(verify.stdout + verify.stderr).toMatch(/permitted subtree violation/);
  });
});

function readdir(dir: string): string[] {
  return readdirSync(dir).sort();
}

/** A TLS handshake against a real server with `issued`, by a client that trusts `caPem` (verification reported, not enforced). */
async function handshake(issued: { key: string; cert: string }, caPem: string, servername: string): Promise<{ authorized: boolean; error: string | null }> {
  const server = createServer({ key: issued.key, cert: issued.cert }, (_req, res) => res.end());
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const socket = connect({ port: (server.address() as { port: number }).port, host: "127.0.0.1", ca: caPem, servername, rejectUnauthorized: false });
    await once(socket, "secureConnect");
    const result = { authorized: socket.authorized, error: socket.authorizationError ? String(socket.authorizationError) : null };
    socket.destroy();
    return result;
  } finally {
    server.close();
  }
}
