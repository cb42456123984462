// The HTTP server's connection limits: half-sent heads, stalled bodies, idle keep-alive connections and silent
// upstreams are closed, while answers a sandbox is streaming (even silently) and upgraded sockets are left alone;
// one client cannot hold more than its share of connections.
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONNECTION_LIMITS, resolveServerConfig } from "../src/config.js";
import { rawPath, startRawUpstream, type RawUpstream } from "./helpers/raw-upstream.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

const RAW_PORT = 7777;
/**
 * Short limits so that the test sees them act; the header timeout is well below the idle one so that half-sent
 * heads meet the former (408). A silent stream below outlasts the idle timeout.
 */
const LIMITS = { headersTimeoutMs: 500, requestTimeoutMs: 0, keepAliveTimeoutMs: 300, idleTimeoutMs: 2_000, maxConnectionsPerClient: 0 };
const SILENCE_MS = 5_000;

let rawUpstream: RawUpstream;
beforeAll(async () => {
  rawUpstream = await startRawUpstream();
});
afterAll(async () => {
  await rawUpstream.close();
});

async function serverWith(config: Partial<typeof LIMITS>): Promise<{ t: TestServer; sandboxId: string }> {
  const t: TestServer = await startTestServer({
    config,
    deps: {
      upstream: (record, port) => (port === RAW_PORT ? { host: "127.0.0.1", port: rawUpstream.port } : t.stub.upstream(record, port)),
    },
  });
  const res = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"templateID":"base"}' });
  return { t, sandboxId: ((await res.json()) as { sandboxID: string }).sandboxID };
}

interface RawClient {
  socket: Socket;
  /** Everything the server sent, as latin1. */
  received: () => string;
  closed: Promise<void>;
}

function rawClient(port: number, send: string): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
    socket.on("error", () => {});
    const closed = new Promise<void>((r) => socket.on("close", () => r()));
    socket.once("connect", () => {
      socket.write(send);
      resolve({ socket, received: () => received, closed });
    });
    socket.once("error", reject);
  });
}

/** Resolves true when the server closed the socket within `ms` (a bound for the test, not a timing claim). */
async function closedWithin(client: RawClient, ms: number): Promise<boolean> {
  return Promise.race([client.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
}

describe("timeouts", () => {
  let t: TestServer;
  let sandboxId = "";
  beforeAll(async () => {
    ({ t, sandboxId } = await serverWith(LIMITS));
  });
  afterAll(async () => {
    await t.close();
  });

  it("closes connections that never finish their request head, with 408", async () => {
    const clients = await Promise.all(
      Array.from({ length: 20 }, (_, i) => rawClient(t.server.port, i % 2 ? "GET /health HTTP/1.1\r\nHost: x\r\n" : "GET /he")),
    );
    const closed = await Promise.all(clients.map((c) => closedWithin(c, 15_000)));
    expect(closed).toEqual(clients.map(() => true));
    for (const c of clients) expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
  });

  it("closes a keep-alive connection that goes idle after its answer", async () => {
    const client = await rawClient(t.server.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(await closedWithin(client, 10_000)).toBe(true);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(client.received()).toMatch(/keep-alive/i);
  });

  it("closes a connection whose request body stalls, and one whose sandbox never answers", async () => {
    const stalled = await rawClient(
      t.server.port,
      `POST /silent HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sandboxId}\r\nE2b-Sandbox-Port: ${RAW_PORT}\r\nContent-Length: 100\r\n\r\nonly ten..`,
    );
    const unanswered = await rawClient(
      t.server.port,
      `GET /silent HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sandboxId}\r\nE2b-Sandbox-Port: ${RAW_PORT}\r\n\r\n`,
    );
    expect(await closedWithin(stalled, 10_000)).toBe(true);
    expect(await closedWithin(unanswered, 10_000)).toBe(true);
    expect(stalled.received()).toBe("");
    expect(unanswered.received()).toBe("");
    await new Promise((r) => setTimeout(r, 200));
    expect(t.server.gateway.inflight(sandboxId)).toBe(0);
  });

  it("keeps an answer the sandbox streams with long silences until it ends", async () => {
    const path = rawPath("HTTP/1.1 200 OK\r\ncontent-type: application/connect+json\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n", {
      holdMs: SILENCE_MS,
      tail: "4\r\nlast\r\n0\r\n\r\n",
    });
    const body = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${t.url}${path}`, { agent: false, headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(RAW_PORT) } }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve(text));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    });
    expect(body).toBe("firstlast");
  });

  it("leaves an upgraded connection open through silences, but closes a handshake the sandbox never answers", async () => {
    const late = await new Promise<string>((resolve, reject) => {
      const path = rawPath("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", { holdMs: SILENCE_MS, tail: "late" });
      const req = httpRequest(`${t.url}${path}`, {
        agent: false,
        headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(RAW_PORT), connection: "Upgrade", upgrade: "websocket" },
      });
      req.on("upgrade", (_res, socket) => {
        let data = "";
        socket.on("data", (d: Buffer) => (data += d.toString()));
        socket.on("close", () => resolve(data));
      });
      req.on("response", (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on("error", reject);
      req.end();
    });
    expect(late).toBe("late");

    const handshake = await rawClient(
      t.server.port,
      `GET /silent HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sandboxId}\r\nE2b-Sandbox-Port: ${RAW_PORT}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    );
    expect(await closedWithin(handshake, 10_000)).toBe(true);
    expect(handshake.received()).toBe("");
  });
});

describe("per-client connection cap", () => {
  it("answers connections over the cap with 503 and admits new ones once others close", async () => {
    const { t } = await serverWith({ maxConnectionsPerClient: 3 });
    try {
      const held = await Promise.all([1, 2, 3].map(() => rawClient(t.server.port, "")));
      const refused = await rawClient(t.server.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
      expect(await closedWithin(refused, 10_000)).toBe(true);
      expect(refused.received()).toMatch(/^HTTP\/1\.1 503 /);
      expect(JSON.parse(refused.received().split("\r\n\r\n")[1]!)).toEqual({ code: 503, message: "Too many open connections from this address" });

      held[0]!.socket.destroy();
      await held[0]!.closed;
      // The server sees the close a little after the client does.
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        status = await fetch(`${t.url}/health`, { headers: { connection: "close" } }).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status).toBe(200);
      for (const c of held) c.socket.destroy();
    } finally {
      await t.close();
    }
  });
});

describe("connection limit settings", () => {
  it("have documented defaults, read BURROW_* variables, and refuse nonsense", () => {
    expect(resolveServerConfig({}, {})).toMatchObject(DEFAULT_CONNECTION_LIMITS);
    expect(DEFAULT_CONNECTION_LIMITS.maxConnectionsPerClient).toBeGreaterThanOrEqual(2000);
    const env = {
      BURROW_HEADERS_TIMEOUT_MS: "1000",
      BURROW_REQUEST_TIMEOUT_MS: "0",
      BURROW_KEEP_ALIVE_TIMEOUT_MS: "2000",
      BURROW_IDLE_TIMEOUT_MS: "3000",
      BURROW_MAX_CONNECTIONS_PER_CLIENT: "7",
    };
    expect(resolveServerConfig({}, env)).toMatchObject({
      headersTimeoutMs: 1000,
      requestTimeoutMs: 0,
      keepAliveTimeoutMs: 2000,
      idleTimeoutMs: 3000,
      maxConnectionsPerClient: 7,
    });
    expect(resolveServerConfig({ idleTimeoutMs: 5 }, env).idleTimeoutMs).toBe(5);
    expect(() => resolveServerConfig({}, { BURROW_IDLE_TIMEOUT_MS: "soon" })).toThrow("BURROW_IDLE_TIMEOUT_MS must be a non-negative integer, got 'soon'");
    expect(() => resolveServerConfig({ headersTimeoutMs: 0 }, {})).toThrow(/headersTimeoutMs/);
    expect(() => resolveServerConfig({ keepAliveTimeoutMs: 0 }, {})).toThrow(/keepAliveTimeoutMs/);
    expect(() => resolveServerConfig({ headersTimeoutMs: 5000, requestTimeoutMs: 1000 }, {})).toThrow(/exceeds requestTimeoutMs/);
    expect(() => resolveServerConfig({ idleTimeoutMs: 2 ** 31 }, {})).toThrow(/idleTimeoutMs/);
  });
});
