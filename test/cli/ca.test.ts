// `burrow ca`: the path (or PEM) of the state directory's local CA, created when missing, and the very CA whose
// certificate the running server presents on HTTPS.
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { runBurrow } from "./run-burrow.js";

describe("burrow ca", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "burrow-cli-ca-"));
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  it("creates the CA when missing and prints its path, the same one afterwards; --pem prints the certificate", async () => {
    const first = await runBurrow(["ca", "--state-dir", stateDir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(`${join(stateDir, "tls", "ca.pem")}\n`);
    const pem = readFileSync(first.stdout.trim(), "utf8");
    expect(new X509Certificate(pem).ca).toBe(true);

    const again = await runBurrow(["ca"], { env: { ...process.env, BURROW_STATE_DIR: stateDir } });
    expect(again).toMatchObject({ code: 0, stdout: first.stdout });
    expect(readFileSync(first.stdout.trim(), "utf8")).toBe(pem);
    expect(await runBurrow(["ca", "--state-dir", stateDir, "--pem"])).toMatchObject({ code: 0, stdout: pem });
  });

  it("says in its help what to export", async () => {
    const help = await runBurrow(["ca", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("export NODE_EXTRA_CA_CERTS=$(burrow ca)");
    expect(help.stdout).toContain("SSL_CERT_FILE");
  });

  it.skipIf(!hasBurrowEnv)("names the CA that the running server's HTTPS certificate chains to", async () => {
    const env = burrowEnv();
    const printed = await runBurrow(["ca", "--state-dir", env.stateDir]);
    expect(printed.code, printed.stderr).toBe(0);
    const ca = readFileSync(printed.stdout.trim(), "utf8");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`https://localhost:${new URL(env.apiUrl).port}/health`, { ca, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(200);
  });
});
