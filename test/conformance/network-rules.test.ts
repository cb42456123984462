// E2B's network API with the official SDK: egress allowOut/denyOut by IP and CIDR (allow wins over deny,
// ALL_TRAFFIC, allow_internet_access), updateNetwork replacing the rules live, GET showing the config, bad input;
// ingress allowPublicTraffic (traffic token) and maskRequestHost; header names kept as the client wrote them.
// Copies of a sandbox (forks, checkpoint children, sandboxes from its snapshot) are restricted as it is; the created
// event carries the network; a paused sandbox's network cannot be changed (409, as E2B).
// Egress goes only to a fake internet in a network namespace this file creates (test/helpers/fake-internet.ts).
import { request } from "node:http";
import { ALL_TRAFFIC, Sandbox } from "e2b";
import { BusClient, Checkpoint, type SandboxEvent } from "@burrow/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowEnv, hasBurrowEnv, sandboxTest, sdkOpts } from "./env.js";

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

/** A call to Burrow's or E2B's REST API with the test key. */
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${burrowEnv().apiUrl}${path}`, {
    method,
    headers: { "x-api-key": burrowEnv().apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
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
    ["allowOut", "*.test"],
    ["denyOut", "a..example.test"],
    ["denyOut", "-x.example.test"],
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

  sandboxTest("domain rules are accepted and shown as written (enforcement: test/egress/)", async ({ spawn }) => {
    const sandbox = await spawn({ network: { denyOut: [ALL_TRAFFIC], allowOut: ["*.Example.test", B] } });
    expect((await sandbox.getInfo()).network).toMatchObject({ allowOut: ["*.Example.test", B], denyOut: [ALL_TRAFFIC] });
    // The IP entry still holds through the firewall, and nothing else gets out.
    expect(await reach(sandbox, B)).toBe(`hello from ${B}`);
    expect(await reach(sandbox, A)).toContain("denied");
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

  sandboxTest("a fork of a sandbox with denyOut is restricted alike, keeps its ingress with a token of its own", async ({ spawn }) => {
    const source = await spawn({ network: { denyOut: [B_BLOCK], allowPublicTraffic: false } });
    const results = await Sandbox.fork(source.sandboxId, { ...sdkOpts(), timeoutMs: 120_000 });
    const fork = results[0];
    if (!(fork instanceof Sandbox)) throw fork ?? new Error("no fork");
    try {
      expect(await reach(fork, B)).toBe("blocked");
      expect(await reach(fork, A)).toBe(`hello from ${A}`);
      const info = await fork.getInfo();
      expect(info.allowInternetAccess).toBe(true);
      expect(info.network).toMatchObject({ allowOut: [], denyOut: [B_BLOCK], allowPublicTraffic: false });
      // Its own traffic token: the source's does not open the fork's ports.
      expect(fork.trafficAccessToken).toMatch(/^[0-9a-f]{48}$/);
      expect(fork.trafficAccessToken).not.toBe(source.trafficAccessToken);
      await startEcho(fork, { "e2b-traffic-access-token": fork.trafficAccessToken! });
      expect((await viaGateway(fork.sandboxId, 8080)).status).toBe(403);
      expect((await viaGateway(fork.sandboxId, 8080, { "e2b-traffic-access-token": source.trafficAccessToken! })).status).toBe(403);
      expect((await viaGateway(fork.sandboxId, 8080, { "e2b-traffic-access-token": fork.trafficAccessToken! })).status).toBe(200);
    } finally {
      await fork.kill().catch(() => undefined);
    }
  });

  sandboxTest("a fork of a sandbox without internet but with allowOut reaches only what is allowed", async ({ spawn }) => {
    const source = await spawn({ allowInternetAccess: false, network: { allowOut: [A] } });
    const [fork] = await Sandbox.fork(source.sandboxId, { ...sdkOpts(), timeoutMs: 120_000 });
    if (!(fork instanceof Sandbox)) throw fork ?? new Error("no fork");
    try {
      expect(await reach(fork, A)).toBe(`hello from ${A}`);
      expect(await reach(fork, B)).toBe("blocked");
      expect((await fork.getInfo()).allowInternetAccess).toBe(false);
    } finally {
      await fork.kill().catch(() => undefined);
    }
  });

  sandboxTest("children of a checkpoint keep the rules of its sandbox, even after the sandbox changed them", async ({ spawn }) => {
    const source = await spawn({ network: { denyOut: [B] } });
    const opts = sdkOpts();
    const taken = await api("POST", `/burrow/v1/sandboxes/${source.sandboxId}/checkpoints`, { label: "restricted" });
    expect(taken.status).toBe(201);
    const checkpointId: string = taken.body.checkpointID;
    // The source opens up after the checkpoint: its children still have the rules it had then.
    await source.updateNetwork({});
    const children = await Checkpoint.branch(checkpointId, 1, opts);
    const child = children[0]?.sandbox;
    if (!child) throw new Error(`branch failed: ${JSON.stringify(children[0]?.error)}`);
    try {
      expect(await reach(child, B)).toBe("blocked");
      expect(await reach(child, A)).toBe(`hello from ${A}`);
      // Rules copied from a checkpoint or snapshot read back as the source's were written, like a fork's.
      expect((await Sandbox.getInfo(child.sandboxId, opts)).network).toMatchObject({ denyOut: [B] });
      // A create naming the checkpoint as its template is a child too.
      const named = await Sandbox.create(checkpointId, { ...opts, timeoutMs: 120_000 });
      try {
        expect(await reach(named, B)).toBe("blocked");
        expect(await reach(named, A)).toBe(`hello from ${A}`);
      } finally {
        await named.kill().catch(() => undefined);
      }
    } finally {
      await Sandbox.kill(child.sandboxId, opts).catch(() => undefined);
      await api("DELETE", `/burrow/v1/checkpoints/${checkpointId}?cascade=true`);
    }
  });

  sandboxTest("a sandbox from a snapshot keeps the rules unless its create sets its own", async ({ spawn }) => {
    const source = await spawn({ network: { denyOut: [B] } });
    const snapshot = await source.createSnapshot();
    try {
      const inherited = await spawn({}, snapshot.snapshotId);
      expect(await reach(inherited, B)).toBe("blocked");
      expect(await reach(inherited, A)).toBe(`hello from ${A}`);
      expect((await inherited.getInfo()).network).toMatchObject({ denyOut: [B] });
      const own = await spawn({ network: { denyOut: [A] } }, snapshot.snapshotId);
      expect(await reach(own, B)).toBe(`hello from ${B}`);
      expect(await reach(own, A)).toBe("blocked");
    } finally {
      await api("DELETE", `/templates/${snapshot.snapshotId}`);
    }
  });

  sandboxTest("the created event carries the enforced internet switch and rules", async ({ spawn }) => {
    const bus = new BusClient({ baseUrl: burrowEnv().apiUrl, apiKey: burrowEnv().apiKey });
    const events = await bus.events.subscribe({ category: "lifecycle" });
    const iterator = events[Symbol.asyncIterator]();
    try {
      const sandbox = await spawn({ allowInternetAccess: false, network: { allowOut: [A], denyOut: [B_BLOCK] } });
      let created: SandboxEvent | undefined;
      while (!created) {
        const next = await iterator.next();
        if (next.done) throw new Error("event stream ended");
        if (next.value.sandboxId === sandbox.sandboxId && next.value.type === "created") created = next.value;
      }
      expect(created.network).toEqual({ allowInternetAccess: false, allowOut: [A], denyOut: [B_BLOCK], allowPublicTraffic: true });
    } finally {
      await iterator.return?.();
    }
  });

  sandboxTest("a paused sandbox's network cannot be changed (409), and resumes with the rules it had", async ({ spawn }) => {
    const sandbox = await spawn({ network: { denyOut: [B] } });
    expect(await sandbox.pause()).toBe(true);
    const put = await api("PUT", `/sandboxes/${sandbox.sandboxId}/network`, { denyOut: [A] });
    expect(put.status).toBe(409);
    expect(put.body).toMatchObject({ code: 409, message: expect.stringContaining("paused") });
    await sandbox.connect();
    expect(await reach(sandbox, B)).toBe("blocked");
    expect(await reach(sandbox, A)).toBe(`hello from ${A}`);
    expect((await sandbox.getInfo()).network).toMatchObject({ denyOut: [B] });
  });

  sandboxTest("a request without the traffic token gets 403 and does not wake a paused sandbox with autoResume", async ({ spawn }) => {
    const sandbox = await spawn({ network: { allowPublicTraffic: false }, lifecycle: { onTimeout: "pause", autoResume: true } });
    const token = sandbox.trafficAccessToken!;
    await startEcho(sandbox, { "e2b-traffic-access-token": token });
    expect(await sandbox.pause()).toBe(true);
    const without = await viaGateway(sandbox.sandboxId, 8080);
    expect(without.status).toBe(403);
    expect(JSON.parse(without.body)).toMatchObject({ sandboxId: sandbox.sandboxId, code: 403 });
    const wrong = await viaGateway(sandbox.sandboxId, 8080, { "e2b-traffic-access-token": "0".repeat(48) });
    expect(wrong.status).toBe(403);
    expect((await Sandbox.getInfo(sandbox.sandboxId, sdkOpts())).state).toBe("paused");
    // With the token the request wakes it and is served.
    const right = await viaGateway(sandbox.sandboxId, 8080, { "e2b-traffic-access-token": token });
    expect(right.status).toBe(200);
    expect((await Sandbox.getInfo(sandbox.sandboxId, sdkOpts())).state).toBe("running");
  });
});
