// E2B's `network.httpsPorts` with the official SDK against the shared test server: sandbox ports that serve HTTPS
// are reached by the gateway over TLS without verifying (a self-signed certificate made here works), plain requests
// and upgrade requests alike; a port not listed is spoken to in plain HTTP (so the same TLS server answers nothing
// usable: 502); the setting is in the sandbox's info, survives a network update (E2B's update does not carry it)
// and is copied to a fork; a bad entry is a 400 naming it. No traffic leaves the machine: client → gateway →
// sandbox.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { expect } from "vitest";
import { burrowEnv, sandboxTest, sdkOpts } from "../conformance/env.js";

/** A self-signed certificate and its key (openssl, in a temporary directory removed after). */
function selfSigned(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), "burrow-https-ports-"));
  try {
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "k.pem"), "-out", join(dir, "c.pem"), "-days", "1", "-subj", "/CN=sandbox.test"], { stdio: "ignore" });
    return { cert: readFileSync(join(dir, "c.pem"), "utf8"), key: readFileSync(join(dir, "k.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// An HTTPS server on 8443 answering "tls <Host> <Upgrade header>" (an upgrade request gets a plain 200 too).
const TLS_SERVER = `import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("tls %s %s" % (self.headers.get("Host", ""), self.headers.get("Upgrade", "-"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
srv = http.server.HTTPServer(("0.0.0.0", 8443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("/tmp/c.pem", "/tmp/k.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
`;

/** A request through the gateway to a sandbox port, addressed by E2B's headers. */
function viaGateway(sandboxId: string, port: number, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const url = new URL(burrowEnv().sandboxUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: "/", headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(port), ...headers } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function startTlsServer(sandbox: Sandbox): Promise<void> {
  const { cert, key } = selfSigned();
  await sandbox.files.write([
    { path: "/tmp/c.pem", data: cert },
    { path: "/tmp/k.pem", data: key },
    { path: "/tmp/tls.py", data: TLS_SERVER },
  ]);
  await sandbox.commands.run("python3 /tmp/tls.py", { background: true });
  // Up once it accepts TLS (checked inside the sandbox, not through the gateway under test).
  for (let i = 0; i < 100; i++) {
    const r = await sandbox.commands.run("curl -sk -m 2 https://127.0.0.1:8443/ || true");
    if (r.stdout.startsWith("tls ")) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the TLS server in the sandbox never answered");
}

sandboxTest("httpsPorts: the gateway speaks TLS to the listed ports, self-signed certificates work, plain and upgrade requests", async ({ spawn }) => {
  const sandbox = await spawn({ network: { httpsPorts: [8443] } } as never);
  await startTlsServer(sandbox);
  const plain = await viaGateway(sandbox.sandboxId, 8443);
  expect(plain, plain.body).toMatchObject({ status: 200, body: expect.stringMatching(/^tls \S+ -$/) });
  const upgrade = await viaGateway(sandbox.sandboxId, 8443, { Connection: "Upgrade", Upgrade: "websocket" });
  expect(upgrade, upgrade.body).toMatchObject({ status: 200, body: expect.stringMatching(/^tls \S+ websocket$/) });
  expect((await sandbox.getInfo()).network).toMatchObject({ httpsPorts: [8443] });

  // An update (which cannot carry httpsPorts) keeps it; a fork has it too.
  await sandbox.updateNetwork({ denyOut: ["203.0.113.0/24"] });
  expect((await viaGateway(sandbox.sandboxId, 8443)).status).toBe(200);
  const [fork] = await Sandbox.fork(sandbox.sandboxId, { ...sdkOpts(), timeoutMs: 120_000 });
  if (!(fork instanceof Sandbox)) throw fork ?? new Error("no fork");
  try {
    expect((await fork.getInfo()).network).toMatchObject({ httpsPorts: [8443] });
  } finally {
    await fork.kill().catch(() => undefined);
  }
});

sandboxTest("a port not in httpsPorts is spoken to in plain HTTP; bad entries are a 400 naming them", async ({ spawn }) => {
  const sandbox = await spawn();
  await startTlsServer(sandbox);
  expect((await viaGateway(sandbox.sandboxId, 8443)).status).toBe(502);
  await expect(spawn({ network: { httpsPorts: [49983] } } as never)).rejects.toThrow(/'49983'.*envd/);
  await expect(spawn({ network: { httpsPorts: [70000] } } as never)).rejects.toThrow(/'70000'/);
});
