// What the gateway does when it cannot get a request through to a running sandbox: a request sent on a kept-alive
// connection that the sandbox closes at that moment goes out again on a fresh connection (when that is safe), and
// what cannot be served in time gets an answer that the official SDK reports as "try again", never as "not running".
import { spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { RateLimitError, Sandbox, SandboxError, SandboxNotFoundError, TimeoutError } from "e2b";
import { ENVD_PORT } from "@burrow/protocol";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

/** Requests to this port of a stub sandbox go to the keep-alive closer below. */
const CLOSER_PORT = 7001;

/**
 * A sandbox port that answers the first request on each connection (keeping the connection open) and closes the
 * connection when a later request arrives on it, the way a server closes an idle keep-alive connection just as the
 * next request goes out. `?reset` resets it instead of closing it; `?after=<n>` waits for n body bytes first;
 * `/silent-close` closes every connection without answering, once the whole request has arrived.
 */
interface Closer {
  port: number;
  /** Requests seen, in order: the connection's number and the request's number on it. */
  seen: Array<{ connection: number; nth: number; path: string; bodyBytes: number }>;
  close(): Promise<void>;
}

async function startCloser(): Promise<Closer> {
  const seen: Closer["seen"] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let buffered = Buffer.alloc(0);
    let nth = 0;
    let current: { path: string; length: number; after: number; reset: boolean; bodyStart: number } | undefined;
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        if (!current) {
          const end = buffered.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = buffered.subarray(0, end).toString("latin1");
          const target = head.split(" ")[1] ?? "/";
          const url = new URL(target, "http://closer.invalid");
          const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          current = { path: url.pathname, length, after: Number(url.searchParams.get("after") ?? 0), reset: url.searchParams.has("reset"), bodyStart: end + 4 };
          nth++;
        }
        const received = buffered.length - current.bodyStart;
        const request = current;
        if (nth > 1 || request.path === "/silent-close") {
          // A later request on a kept-alive connection (or any request on /silent-close): close without answering.
          const waitFor = request.path === "/silent-close" ? request.length : request.after;
          if (received < waitFor) return;
          seen.push({ connection, nth, path: request.path, bodyBytes: received });
          if (request.reset) socket.resetAndDestroy();
          else socket.end();
          return;
        }
        if (received < request.length) return;
        const body = buffered.subarray(request.bodyStart, request.bodyStart + request.length).toString("latin1");
        buffered = buffered.subarray(request.bodyStart + request.length);
        seen.push({ connection, nth, path: request.path, bodyBytes: request.length });
        const payload = JSON.stringify({ connection, nth, path: request.path, body });
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\nkeep-alive: timeout=60\r\n\r\n${payload}`);
        current = undefined;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    seen,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A listening port whose accept queue is full and whose owner is stopped: the kernel drops further SYNs, so a
 * connection to it is never established (a sandbox whose network or envd stopped answering).
 */
interface Stalled {
  port: number;
  close(): void;
}

async function startStalled(): Promise<Stalled> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["-e", `const s=require("net").createServer(()=>{});s.listen({port:0,host:"127.0.0.1",backlog:1},()=>process.stdout.write(s.address().port+"\\n"))`],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = Number(await new Promise<string>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()))));
  process.kill(child.pid!, "SIGSTOP");
  // Fill the accept queue (backlog 1 holds two); the third connection already hangs.
  const fillers: Socket[] = [];
  await Promise.all(
    [0, 1].map(
      () =>
        new Promise<void>((resolve, reject) => {
          const socket = connect(port, "127.0.0.1", () => resolve());
          socket.on("error", reject);
          fillers.push(socket);
        }),
    ),
  );
  return {
    port,
    close: () => {
      for (const socket of fillers) socket.destroy();
      process.kill(child.pid!, "SIGKILL");
    },
  };
}

let t: TestServer;
let closer: Closer;
let stalled: Stalled;
/** The sandbox whose envd port leads to the stalled listener. */
let stalledSandboxId = "";
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  closer = await startCloser();
  stalled = await startStalled();
  const logger = pino({ level: "info" }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  t = await startTestServer({
    deps: {
      logger,
      upstream: (record, port) => {
        if (port === CLOSER_PORT) return { host: "127.0.0.1", port: closer.port };
        if (record.sandboxId === stalledSandboxId && port === ENVD_PORT) return { host: "127.0.0.1", port: stalled.port };
        return t.stub.upstream(record, port);
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
  await closer?.close();
  stalled?.close();
});

async function newSandbox(): Promise<string> {
  const res = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"templateID":"base"}' });
  return ((await res.json()) as { sandboxID: string }).sandboxID;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request through the gateway on a connection of its own (the gateway's pool is what is under test). */
function viaGateway(sandboxId: string, path: string, opts: { method?: string; body?: Buffer | string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${t.url}${path}`,
      {
        method: opts.method ?? "GET",
        agent: false,
        headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(CLOSER_PORT), ...opts.headers },
      },
      (res) => {
        let body = "";
        res.setEncoding("latin1");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

function failureLines(sandboxId: string): Array<Record<string, unknown>> {
  return logs.filter((l) => l["sandboxId"] === sandboxId && String(l["msg"]).startsWith("sandbox connection failed"));
}

describe("a kept-alive connection that the sandbox closes as a request goes out", () => {
  it("sends a GET again on a fresh connection, and logs why", async () => {
    const id = await newSandbox();
    const first = await viaGateway(id, "/a");
    expect(first.status).toBe(200);
    const again = await viaGateway(id, "/b");
    expect(again.status).toBe(200);
    // Answered as the first request of a new connection: the closed one was not used twice.
    expect(JSON.parse(again.body)).toMatchObject({ path: "/b", nth: 1 });
    expect(JSON.parse(again.body).connection).not.toBe(JSON.parse(first.body).connection);
    expect(failureLines(id)).toEqual([
      expect.objectContaining({ port: CLOSER_PORT, cause: "closed", reusedConnection: true, retried: true, level: 40 }),
    ]);
  });

  it("replays a small POST body (a Connect call) byte for byte, after a reset too", async () => {
    const id = await newSandbox();
    expect((await viaGateway(id, "/warm")).status).toBe(200);
    const body = JSON.stringify({ process: { cmd: "/bin/bash", args: ["-l", "-c", "echo ok"] } });
    const answer = await viaGateway(id, "/process.Process/Start?reset", {
      method: "POST",
      body,
      headers: { "content-type": "application/connect+json", "content-length": String(Buffer.byteLength(body)) },
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ nth: 1, body });
    expect(failureLines(id)).toEqual([expect.objectContaining({ code: "ECONNRESET", reusedConnection: true, retried: true })]);
  });

  it("answers 503 with Retry-After, not a 502, when a large upload on it cannot be replayed", async () => {
    const id = await newSandbox();
    expect((await viaGateway(id, "/warm")).status).toBe(200);
    const upload = Buffer.alloc(300 * 1024, "x");
    const answer = await viaGateway(id, `/files?after=${200 * 1024}&reset`, { method: "POST", body: upload, headers: { "content-length": String(upload.length) } });
    expect(answer.status).toBe(503);
    expect(answer.headers["retry-after"]).toBe("1");
    expect(JSON.parse(answer.body)).toMatchObject({ sandboxId: id, port: CLOSER_PORT, code: 503 });
    expect(JSON.parse(answer.body).message).toMatch(/running.*retry/);
    expect(failureLines(id)).toEqual([expect.objectContaining({ reusedConnection: true, retried: false })]);
  });
});

describe("a fresh connection that the sandbox closes without answering", () => {
  it("retries an idempotent request once, then answers 502 saying so", async () => {
    const id = await newSandbox();
    const before = closer.seen.length;
    const answer = await viaGateway(id, "/silent-close");
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toEqual({
      sandboxId: id,
      message: `The sandbox ${id} closed the connection on port ${CLOSER_PORT} without answering`,
      port: CLOSER_PORT,
      code: 502,
    });
    expect(closer.seen.length - before).toBe(2);
    expect(failureLines(id).map((l) => [l["reusedConnection"], l["retried"]])).toEqual([
      [false, true],
      [false, false],
    ]);
  });

  it("does not send a POST twice once the sandbox may have received it", async () => {
    const id = await newSandbox();
    const before = closer.seen.length;
    const answer = await viaGateway(id, "/silent-close", { method: "POST", body: "once", headers: { "content-length": "4" } });
    expect(answer.status).toBe(502);
    expect(closer.seen.length - before).toBe(1);
    expect(failureLines(id)).toEqual([expect.objectContaining({ reusedConnection: false, connected: true, retried: false })]);
  });
});

describe("a running sandbox that does not accept the connection in time", () => {
  // The gateway waits CONNECT_TIMEOUT_MS (15 s) for each; the four run at once.
  it("gets answers the official SDK reports as retryable, not as a sandbox that is gone", { timeout: 120_000 }, async () => {
    const sandbox = await Sandbox.create("base", t.sdkOpts);
    stalledSandboxId = sandbox.sandboxId;
    const [run, list, read, running] = await Promise.allSettled([
      sandbox.commands.run("echo ok"),
      sandbox.files.list("/"),
      sandbox.files.read("/etc/hostname"),
      sandbox.isRunning(),
    ]);
    for (const outcome of [run, list]) {
      expect(outcome.status).toBe("rejected");
      const err = (outcome as PromiseRejectedResult).reason as Error;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err).not.toBeInstanceOf(SandboxNotFoundError);
      expect(err.message).toMatch(new RegExp(`sandbox ${sandbox.sandboxId} is running.*timeout: ETIMEDOUT.*retry`));
    }
    for (const outcome of [read, running]) {
      expect(outcome.status).toBe("rejected");
      const err = (outcome as PromiseRejectedResult).reason as Error;
      expect(err).toBeInstanceOf(SandboxError);
      expect(err).not.toBeInstanceOf(TimeoutError);
      expect(err.message).toMatch(/^503: .*is running/);
    }
    expect(failureLines(sandbox.sandboxId).map((l) => [l["cause"], l["connected"], l["retried"]])).toEqual(
      Array.from({ length: 4 }, () => ["timeout", false, false]),
    );
    stalledSandboxId = "";
    // Killed, the same sandbox is gone: now, and only now, the SDK hears "not running".
    await sandbox.kill();
    expect(await sandbox.isRunning()).toBe(false);
  });
});

describe("a sandbox that has ended", () => {
  it("gets E2B's 502 not found, and the first request for it afterwards is logged with when it ended", async () => {
    const id = await newSandbox();
    expect((await t.api(`/sandboxes/${id}`, { method: "DELETE" })).status).toBe(204);
    for (let i = 0; i < 2; i++) {
      const answer = await viaGateway(id, "/health", { headers: { "E2b-Sandbox-Port": "49983" } });
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.body)).toEqual({ sandboxId: id, message: "The sandbox was not found", code: 502 });
    }
    const lines = logs.filter((l) => l["sandboxId"] === id && String(l["msg"]).startsWith("request for a sandbox that has ended"));
    expect(lines).toEqual([expect.objectContaining({ level: 30, url: "/health", endedSecondsAgo: expect.any(Number) })]);
    expect(failureLines(id)).toEqual([]);
  });
});
