// E2B's pattern for reaching a server inside a sandbox, as its docs write it, from programs on the host:
//   await sandbox.commands.run("python3 -m http.server 8000", { background: true })
//   await fetch("http://" + sandbox.getHost(8000))
// with Node's fetch, Python's urllib and curl, over http:// and, trusting the state directory's local CA, https://.
// The name resolves to loopback through nss-myhostname (installed by `npm start`), not through any hand-made Host
// header or --resolve: every client here resolves `<port>-<id>.burrow.localhost` by itself.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { burrowEnv, hasBurrowEnv, sdkOpts, TEMPLATE } from "./env.js";

const MARKER = "hello-from-burrow.txt";
const REPO_ROOT = join(import.meta.dirname, "..", "..");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A program on the host, with E2B_* variables of the caller's environment removed (they would redirect the SDK). */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("E2B_") && name !== "NODE_EXTRA_CA_CERTS" && name !== "SSL_CERT_FILE"));
  return new Promise((resolve) => {
    execFile(command, args, { cwd: REPO_ROOT, env: { ...base, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const NODE_FETCH = "fetch(process.argv[1]).then(async (r) => process.stdout.write(r.status + '\\n' + (await r.text())))";
const PYTHON_URLOPEN = "import sys, urllib.request\nr = urllib.request.urlopen(sys.argv[1], timeout=30)\nprint(r.status)\nprint(r.read().decode())";

describe.skipIf(!hasBurrowEnv)("getHost() URLs from programs on the host", () => {
  let sandbox: Sandbox;
  let caFile: string;

  beforeAll(async () => {
    caFile = join(burrowEnv().stateDir, "tls", "ca.pem");
    sandbox = await Sandbox.create(TEMPLATE, { ...sdkOpts(), timeoutMs: 300_000 });
    await sandbox.files.write(`/home/user/www/${MARKER}`, "hello\n");
    await sandbox.commands.run("cd /home/user/www && python3 -m http.server 8000", { background: true });
    // Wait for the server in the sandbox, through the very URL under test.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = await fetch(`http://${sandbox.getHost(8000)}`).then((res) => res.status, () => 0);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status, "the sandbox's http.server never answered on its getHost() URL").toBe(200);
  });
  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
  });

  it("getHost() names the sandbox under burrow.localhost with the server's port", () => {
    const port = new URL(burrowEnv().apiUrl).port;
    expect(sandbox.getHost(8000)).toBe(`8000-${sandbox.sandboxId}.burrow.localhost:${port}`);
  });

  it("Node's fetch, in this process, gets the sandbox server's listing", async () => {
    const res = await fetch("http://" + sandbox.getHost(8000));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(`href="${MARKER}"`);
  });

  it("Python's urllib (python3 -c on the host) and curl get it too", async () => {
    const url = "http://" + sandbox.getHost(8000);
    const python = await run("python3", ["-c", PYTHON_URLOPEN, url]);
    expect(python.code, python.stderr).toBe(0);
    expect(python.stdout).toMatch(/^200\n/);
    expect(python.stdout).toContain(`href="${MARKER}"`);
    const curl = await run("curl", ["-sS", "--fail", url]);
    expect(curl.code, curl.stderr).toBe(0);
    expect(curl.stdout).toContain(`href="${MARKER}"`);
  });

  it("https:// + getHost() works for Node, Python and curl that trust the local CA, and only for them", async () => {
    const url = "https://" + sandbox.getHost(8000);
    const node = await run(process.execPath, ["-e", NODE_FETCH, url], { NODE_EXTRA_CA_CERTS: caFile });
    expect(node.code, node.stderr).toBe(0);
    expect(node.stdout).toMatch(/^200\n/);
    expect(node.stdout).toContain(`href="${MARKER}"`);
    const python = await run("python3", ["-c", PYTHON_URLOPEN, url], { SSL_CERT_FILE: caFile });
    expect(python.code, python.stderr).toBe(0);
    expect(python.stdout).toContain(`href="${MARKER}"`);
    const curl = await run("curl", ["-sS", "--fail", "--cacert", caFile, url]);
    expect(curl.code, curl.stderr).toBe(0);
    expect(curl.stdout).toContain(`href="${MARKER}"`);

    // Without the CA the certificate is refused: the checks above are real verifications.
    const untrustedNode = await run(process.execPath, ["-e", NODE_FETCH, url]);
    expect(untrustedNode.code).not.toBe(0);
    expect(untrustedNode.stderr).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/i);
    const untrustedCurl = await run("curl", ["-sS", "--fail", url]);
    expect(untrustedCurl.code).toBe(60); // CURLE_PEER_FAILED_VERIFICATION
    const untrustedPython = await run("python3", ["-c", PYTHON_URLOPEN, url]);
    expect(untrustedPython.code).not.toBe(0);
    expect(untrustedPython.stderr).toContain("CERTIFICATE_VERIFY_FAILED");
  });

  it("the official SDK needs no E2B_SANDBOX_URL with the CA trusted: envd is reached at https://49983-<id>.<domain>", async () => {
    const { apiKey } = burrowEnv();
    const port = new URL(burrowEnv().apiUrl).port;
    // Only what a user would export: the API's address (over HTTPS here too), the key and the CA.
    const script = [
      "import { Sandbox } from 'e2b';",
      `const sandbox = await Sandbox.connect(${JSON.stringify(sandbox.sandboxId)});`,
      "const result = await sandbox.commands.run('ls /home/user/www');",
      "process.stdout.write(JSON.stringify({ host: sandbox.getHost(8000), stdout: result.stdout }));",
    ].join("\n");
    const child = await run(process.execPath, ["--input-type=module", "-e", script], {
      E2B_API_URL: `https://localhost:${port}`,
      E2B_API_KEY: apiKey,
      NODE_EXTRA_CA_CERTS: caFile,
    });
    expect(child.code, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({ host: sandbox.getHost(8000), stdout: `${MARKER}\n` });
  });
});
