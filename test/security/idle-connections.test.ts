// Idle and half-open connections end: half-sent requests, idle keep-alive connections and stalled uploads are
// closed by the server, while a long command whose stream stays silent for longer than the idle timeout still
// completes. The server runs in its own process with short limits set through its BURROW_* variables.
import { rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox, Template } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const LIMITS = {
  BURROW_HEADERS_TIMEOUT_MS: "1000",
  BURROW_KEEP_ALIVE_TIMEOUT_MS: "1000",
  BURROW_IDLE_TIMEOUT_MS: "3000",
};
/** Longer than the idle timeout, and shorter than the SDK's 50 s keepalive interval: the stream is silent throughout. */
const SILENT_COMMAND = "sleep 10; echo done";

interface RawClient {
  socket: Socket;
  received: () => string;
  closed: Promise<void>;
}

function rawClient(url: string, send: string): Promise<RawClient> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
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

/** True when the server closed the socket within `ms` (a bound that keeps a broken server from hanging the test). */
function closedWithin(client: RawClient, ms: number): Promise<boolean> {
  return Promise.race([client.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
}

describe("idle connections", () => {
  const instance = newTestInstance("idle");
  let server: ServerProcess;
  let sandbox: Sandbox;

  beforeAll(async () => {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], LIMITS);
    sandbox = await Sandbox.create("base", { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false, timeoutMs: 300_000 });
  });

  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("closes 20 connections that each sent half a request", async () => {
    const halves = [
      "GET /health HTTP/1.1\r\nHost: localhost\r\n",
      `GET /health HTTP/1.1\r\nHost: 49983-${sandbox.sandboxId}.localhost\r\nX-Partial: `,
      "POST /v2/sandboxes HTTP/1.1\r\nContent-Type: appl",
      "GE",
    ];
    const clients = await Promise.all(Array.from({ length: 20 }, (_, i) => rawClient(server.url, halves[i % halves.length]!)));
    const closed = await Promise.all(clients.map((c) => closedWithin(c, 20_000)));
    expect(closed).toEqual(clients.map(() => true));
    for (const c of clients) expect(c.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout/);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });

  it("closes a keep-alive connection once it has been idle after its answer", async () => {
    const client = await rawClient(server.url, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    expect(await closedWithin(client, 20_000)).toBe(true);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(client.received()).toMatch(/keep-alive: timeout=1/i);
  });

  it("closes an upload to a sandbox that stalls mid-body", async () => {
    // A signed upload URL (routed to envd by its signature); envd writes what arrives and waits for the rest.
    const upload = new URL(await sandbox.uploadUrl("/tmp/stalled", { user: "root" }));
    const client = await rawClient(
      server.url,
      `POST ${upload.pathname}${upload.search} HTTP/1.1\r\nHost: localhost\r\n` +
        "Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\nthe first few bytes",
    );
    expect(await closedWithin(client, 20_000)).toBe(true);
    // No answer came: envd was still waiting for the body when the server gave up on the client.
    expect(client.received()).toBe("");
    expect(server.child.exitCode).toBeNull();
    expect((await sandbox.commands.run("echo alive")).stdout).toBe("alive\n");
  });

  it("lets a command whose stream stays silent longer than the idle timeout finish", async () => {
    const result = await sandbox.commands.run(SILENT_COMMAND, { timeoutMs: 60_000 });
    expect(result.stdout).toBe("done\n");
    expect(result.exitCode).toBe(0);
  });

  it("lets an API request the server takes longer than the idle timeout to answer finish (a create waiting for readiness)", { timeout: 300_000 }, async () => {
    const conn = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false };
    const name = `slow-ready-${Math.random().toString(36).slice(2, 8)}`;
    // The ready check passes only after 8 s (the idle timeout is 3 s): the create's connection is silent meanwhile.
    await Template.build(Template().fromTemplate("base").setStartCmd("sleep 8; touch /tmp/ready; sleep infinity", "test -f /tmp/ready"), name, conn);
    const slow = await Sandbox.create(name, { ...conn, timeoutMs: 60_000 });
    try {
      expect((await slow.commands.run("echo ready")).stdout).toBe("ready\n");
    } finally {
      await slow.kill();
    }
  });
});
