// The gateway: header, host and signature routing, streaming, upgrades, and what clients see when a sandbox goes.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect as netConnect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { fileSignature } from "../src/gateway/signature.js";
import { CLOSED_PORT } from "./helpers/stub-orchestrator.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function raw(path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${t.url}${path}`, { method: opts.method ?? "GET", headers: opts.headers ?? {} }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(opts.body);
  });
}

async function newSandbox() {
  const res = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"templateID":"base"}' });
  const body = (await res.json()) as { sandboxID: string; envdAccessToken: string };
  return { id: body.sandboxID, token: body.envdAccessToken };
}

const gone = (sandboxId: string) => ({ sandboxId, message: "The sandbox was not found", code: 502 });

describe("routing", () => {
  it("routes by E2b-Sandbox-Id (default port 49983) and streams bodies both ways", async () => {
    const a = await newSandbox();
    const b = await newSandbox();
    const health = await raw("/health", { headers: { "E2b-Sandbox-Id": a.id } });
    expect(health.status).toBe(204);
    const echo = await raw("/process.Process/List?x=1", {
      method: "POST",
      headers: { "e2b-sandbox-id": b.id, "e2b-sandbox-port": "49983", "x-access-token": b.token, "content-type": "application/json" },
      body: "{}",
    });
    expect(JSON.parse(echo.body)).toMatchObject({ sandboxId: b.id, method: "POST", url: "/process.Process/List?x=1", body: "{}" });
    expect(JSON.parse(echo.body).headers["x-access-token"]).toBe(b.token);
    // Without a sandbox header the same path belongs to the API.
    expect((await raw("/health")).status).toBe(200);
  });

  it("routes by Host <port>-<id>.<any domain>", async () => {
    const a = await newSandbox();
    for (const host of [`8080-${a.id}.localhost:3000`, `8080-${a.id}.example.com`, `49983-${a.id}.burrow.internal`]) {
      const res = await raw("/hello", { headers: { host } });
      expect(res.status, host).toBe(200);
      expect(JSON.parse(res.body)).toMatchObject({ sandboxId: a.id, url: "/hello" });
    }
    expect(JSON.parse((await raw("/", { headers: { host: `8080-unknown.localhost` } })).body)).toEqual(gone("unknown"));
  });

  it("routes signed /files URLs without headers, expired ones included, to the signing sandbox", async () => {
    const a = await newSandbox();
    const b = await newSandbox();
    const path = "/home/user/a b.txt";
    const sig = (token: string, operation: "read" | "write", expiration?: string) =>
      fileSignature({ path, operation, username: "user", envdAccessToken: token, ...(expiration ? { expiration } : {}) });
    const q = (s: string, extra = "") => `/files?path=${encodeURIComponent(path)}&username=user&signature=${encodeURIComponent(s)}${extra}`;

    const read = await raw(q(sig(b.token, "read")));
    expect(JSON.parse(read.body)).toMatchObject({ sandboxId: b.id, method: "GET" });
    const write = await raw(q(sig(a.token, "write")), { method: "POST", body: "data" });
    expect(JSON.parse(write.body)).toMatchObject({ sandboxId: a.id, method: "POST", body: "data" });
    // Expired: still routed, so that envd answers its own 401.
    const exp = String(Math.floor(Date.now() / 1000) - 60);
    const expired = await raw(q(sig(a.token, "read", exp), `&signature_expiration=${exp}`));
    expect(JSON.parse(expired.body)).toMatchObject({ sandboxId: a.id });
    // Wrong operation or unknown token: no sandbox matches.
    const wrongOp = await raw(q(sig(a.token, "write")));
    expect(wrongOp.status).toBe(502);
    expect(JSON.parse(wrongOp.body)).toEqual(gone(""));
  });

  it("routes the SDK's own downloadUrl/uploadUrl", async () => {
    const sbx = await Sandbox.create("base", t.sdkOpts);
    try {
      const download = await sbx.downloadUrl("/etc/hosts", { useSignatureExpiration: 60_000 });
      const res = await fetch(download);
      expect(await res.json()).toMatchObject({ sandboxId: sbx.sandboxId, method: "GET" });
      const upload = await sbx.uploadUrl("/tmp/x", { user: "root" });
      const up = await fetch(upload, { method: "POST", body: "x" });
      expect(await up.json()).toMatchObject({ sandboxId: sbx.sandboxId, method: "POST" });
    } finally {
      await sbx.kill();
    }
  });

  it("answers 502 JSON for unknown or killed sandboxes, 400 for bad ports, 502 for closed ports", async () => {
    const unknown = await raw("/health", { headers: { "E2b-Sandbox-Id": "nosuchsandbox" } });
    expect(unknown.status).toBe(502);
    expect(unknown.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(unknown.body)).toEqual(gone("nosuchsandbox"));

    const a = await newSandbox();
    const badPort = await raw("/", { headers: { "E2b-Sandbox-Id": a.id, "E2b-Sandbox-Port": "99999" } });
    expect(badPort.status).toBe(400);
    expect(JSON.parse(badPort.body)).toMatchObject({ code: 400 });
    const closed = await raw("/", { headers: { "E2b-Sandbox-Id": a.id, "E2b-Sandbox-Port": String(CLOSED_PORT) } });
    expect(closed.status).toBe(502);
    expect(JSON.parse(closed.body)).toMatchObject({ sandboxId: a.id, code: 502, port: CLOSED_PORT });

    await t.api(`/sandboxes/${a.id}`, { method: "DELETE" });
    const killed = await raw("/health", { headers: { "E2b-Sandbox-Id": a.id } });
    expect(killed.status).toBe(502);
    expect(JSON.parse(killed.body)).toEqual(gone(a.id));
  });

  it("survives malformed requests", async () => {
    const reply = await new Promise<string>((resolve) => {
      const socket = netConnect(t.server.port, "127.0.0.1");
      let data = "";
      socket.on("data", (d) => (data += d.toString()));
      socket.on("close", () => resolve(data));
      socket.on("error", () => resolve(data));
      socket.write("GARBAGE \x00\x01 HTTP/9\r\n\r\n");
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect((await raw("/health")).status).toBe(200);
  });
});

describe("streams and teardown", () => {
  it("flows stream chunks immediately and drops the connection when the sandbox is killed", async () => {
    const a = await newSandbox();
    const outcome = await new Promise<{ chunks: number; error: string }>((resolve) => {
      let chunks = 0;
      const req = httpRequest(`${t.url}/stream`, { headers: { "E2b-Sandbox-Id": a.id } }, (res) => {
        expect(res.headers["content-type"]).toBe("application/connect+json");
        res.on("data", () => {
          chunks++;
          if (chunks === 2) void t.api(`/sandboxes/${a.id}`, { method: "DELETE" });
        });
        res.on("error", (err) => resolve({ chunks, error: err.message }));
        res.on("end", () => resolve({ chunks, error: "ended cleanly" }));
      });
      req.on("error", (err) => resolve({ chunks, error: err.message }));
      req.end();
    });
    expect(outcome.chunks).toBeGreaterThanOrEqual(2);
    expect(outcome.error).not.toBe("ended cleanly");
    expect(t.server.gateway.inflight(a.id)).toBe(0);
    expect((await raw("/health", { headers: { "E2b-Sandbox-Id": a.id } })).status).toBe(502);
  });

  it("proxies upgrades (WebSocket-style) and echoes both ways", async () => {
    const a = await newSandbox();
    const echoed = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${t.url}/ws`, {
        headers: { host: `8080-${a.id}.localhost`, connection: "Upgrade", upgrade: "websocket" },
      });
      req.on("upgrade", (res, socket) => {
        expect(res.statusCode).toBe(101);
        socket.write("ping");
        socket.once("data", (d: Buffer) => {
          resolve(d.toString());
          socket.destroy();
        });
      });
      req.on("response", (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on("error", reject);
      req.end();
    });
    expect(echoed).toBe("ping");
    expect(t.stub.sandboxes.get(a.id)!.requests.at(-1)).toMatchObject({ url: "/ws" });

    const refused = await new Promise<number>((resolve) => {
      const req = httpRequest(`${t.url}/ws`, { headers: { "E2b-Sandbox-Id": "nosuch", connection: "Upgrade", upgrade: "websocket" } });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("upgrade", () => resolve(101));
      req.end();
    });
    expect(refused).toBe(502);
  });
});
