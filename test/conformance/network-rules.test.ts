// E2B's network API with the official SDK: egress allowOut/denyOut by IP and CIDR (allow wins over deny,
// ALL_TRAFFIC, allow_internet_access), updateNetwork replacing the rules live, GET showing the config, bad input;
// ingress allowPublicTraffic (traffic token) and maskRequestHost; header names kept as the client wrote them.
// Egress goes only to a fake internet in a network namespace this file creates (test/helpers/fake-internet.ts).
import { request } from "node:http";
import { ALL_TRAFFIC, Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowEnv, hasBurrowEnv, sandboxTest } from "./env.js";

// .10 is outside 203.0.113.16/28, .20 inside it.
const A = "203.0.113.10";
const B = "203.0.113.20";
const B_BLOCK = "203.0.113.16/28";

let internet: FakeInternet;

/** What a sandbox gets from a fake host: "hello from <addr>", or "blocked" when nothing answers within 3 s. */
async function reach(sandbox: Sandbox, host: string): Promise<string> {
  internet.assertRouted();
  const result = await sandbox.commands.run(`curl -s -m 3 http://${host}/ || echo blocked`, { timeoutMs: 30_000 });
  return result.stdout.trim();
}

/** An HTTP exchange through the gateway to a sandbox port, addressed by E2B's headers. */
function viaGateway(sandboxId: string, port: number, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const url = new URL(burrowEnv().sandboxUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: "/", headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(port), ...headers } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** A server in the sandbox on 8080 that answers with the request's header lines as it received them. */
const ECHO_SERVER = `cat > /tmp/echo.py <<'EOF'
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = "".join("%s: %s\\n" % (k, v) for k, v in self.headers.items()).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("0.0.0.0", 8080), H).serve_forever()
EOF
python3 /tmp/echo.py`;

async function startEcho(sandbox: Sandbox, headers: Record<string, string> = {}): Promise<void> {
  await sandbox.commands.run(ECHO_SERVER, { background: true });
  for (let i = 0; i < 100; i++) {
    const { status } = await viaGateway(sandbox.sandboxId, 8080, headers);
    if (status !== 502) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the echo server in the sandbox never answered");
}

describe.skipIf(!hasBurrowEnv)("network rules (official SDK, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A, B]);
  });
  afterAll(async () => {
    await internet?.close();
  });

  sandboxTest("a sandbox without rules reaches every fake host", async ({ sandbox }) => {
    expect(await reach(sandbox, A)).toBe(`hello from ${A}`);
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
  });

  sandboxTest("denyOut by CIDR blocks only that block", async ({ spawn }) => {
    const sandbox = await spawn({ network: { denyOut: [B_BLOCK] } });
    expect(await reach(sandbox, A)).toBe(`hello from ${A}`);
    expect(await reach(sandbox, B)).toBe("blocked");
  });

  sandboxTest("allowOut wins over denyOut: deny ALL_TRAFFIC and allow one IP", async ({ spawn }) => {
    const sandbox = await spawn({ network: { denyOut: [ALL_TRAFFIC], allowOut: [B] } });
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
    expect(await reach(sandbox, A)).toBe("blocked");
  });

  sandboxTest("allowOut wins inside a denied CIDR", async ({ spawn }) => {
    const sandbox = await spawn({ network: { denyOut: ["203.0.113.0/24"], allowOut: [`${B}/32`] } });
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
    expect(await reach(sandbox, A)).toBe("blocked");
  });

  sandboxTest("allowInternetAccess false still lets allowOut through", async ({ spawn }) => {
    const sandbox = await spawn({ allowInternetAccess: false, network: { allowOut: [B_BLOCK] } });
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
    expect(await reach(sandbox, A)).toBe("blocked");
    const info = await sandbox.getInfo();
    expect(info.allowInternetAccess).toBe(false);
    expect(info.network).toMatchObject({ allowOut: [B_BLOCK], denyOut: [], allowPublicTraffic: true });
  });

  sandboxTest("updateNetwork replaces the rules live, and GET shows them", async ({ sandbox }) => {
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
    await sandbox.updateNetwork({ denyOut: [B] });
    expect(await reach(sandbox, B)).toBe("blocked");
    expect(await reach(sandbox, A)).toBe(`hello from ${A}`);
    expect((await sandbox.getInfo()).network).toMatchObject({ allowOut: [], denyOut: [B] });
    // Omitted lists are cleared.
    await sandbox.updateNetwork({});
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
    // allow_internet_access is switchable, with allowOut still honoured.
    await sandbox.updateNetwork({ allowInternetAccess: false, allowOut: [A] });
    expect(await reach(sandbox, A)).toBe(`hello from ${A}`);
    expect(await reach(sandbox, B)).toBe("blocked");
    expect((await sandbox.getInfo()).allowInternetAccess).toBe(false);
    await sandbox.updateNetwork({ allowInternetAccess: true });
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
  });

  sandboxTest("a bad update is a 400 naming the entry and leaves the old rules", async ({ sandbox }) => {
    await sandbox.updateNetwork({ denyOut: [B] });
    await expect(sandbox.updateNetwork({ denyOut: ["203.0.113.300"] })).rejects.toThrow(/203\.0\.113\.300/);
    expect(await reach(sandbox, B)).toBe("blocked");
    expect((await sandbox.getInfo()).network).toMatchObject({ denyOut: [B] });
  });

  it.each([
    ["allowOut", "10.0.0.0/33"],
    ["denyOut", "1.2.3"],
    ["denyOut", "1.2.3.4:80"],
    ["allowOut", "bad_domain!"],
  ])("create with a malformed %s entry %s is a 400 naming it", async (field, entry) => {
    const res = await fetch(`${burrowEnv().apiUrl}/sandboxes`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": burrowEnv().apiKey },
      body: JSON.stringify({ templateID: "base", network: { [field]: [entry] } }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: number; message: string };
    expect(body.code).toBe(400);
    expect(body.message).toContain(entry);
  });

  it("a domain rule is refused with 501 (not enforced yet), never accepted", async () => {
    const res = await fetch(`${burrowEnv().apiUrl}/sandboxes`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": burrowEnv().apiKey },
      body: JSON.stringify({ templateID: "base", network: { denyOut: [ALL_TRAFFIC], allowOut: ["*.example.com"] } }),
    });
    expect(res.status).toBe(501);
    expect(((await res.json()) as { message: string }).message).toContain("*.example.com");
  });

  sandboxTest("allowPublicTraffic false: 403 without the traffic token, 200 with it, envd unaffected", async ({ spawn }) => {
    const sandbox = await spawn({ network: { allowPublicTraffic: false } });
    const token = sandbox.trafficAccessToken;
    expect(token).toMatch(/^[0-9a-f]{48}$/);
    // envd (49983) needs no traffic token: the SDK's commands work.
    await startEcho(sandbox, { "e2b-traffic-access-token": token! });
    const without = await viaGateway(sandbox.sandboxId, 8080);
    expect(without.status).toBe(403);
    expect(JSON.parse(without.body)).toEqual({
      sandboxId: sandbox.sandboxId,
      message: "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing",
      code: 403,
    });
    const wrong = await viaGateway(sandbox.sandboxId, 8080, { "e2b-traffic-access-token": "0".repeat(48) });
    expect(wrong.status).toBe(403);
    const right = await viaGateway(sandbox.sandboxId, 8080, { "e2b-traffic-access-token": token! });
    expect(right.status).toBe(200);
  });

  sandboxTest("a sandbox with public traffic has no traffic token", async ({ sandbox }) => {
    expect(sandbox.trafficAccessToken).toBeUndefined();
  });

  sandboxTest("maskRequestHost rewrites Host with the target port; header names arrive as sent", async ({ spawn }) => {
    const sandbox = await spawn({ network: { maskRequestHost: "localhost:${PORT}" } });
    await startEcho(sandbox);
    const { status, body } = await viaGateway(sandbox.sandboxId, 8080, { "X-Custom-Case": "kept" });
    expect(status).toBe(200);
    const lines = body.split("\n");
    expect(lines).toContain("Host: localhost:8080");
    expect(lines).toContain("X-Custom-Case: kept");
    expect((await sandbox.getInfo()).network).toMatchObject({ maskRequestHost: "localhost:${PORT}" });
  });
});
