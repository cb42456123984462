// A client takes a pooled keep-alive connection and sends the request's head only once its body is ready (undici's
// fetch does so with an upload, reading a large Blob first: seconds on a busy host). The server, with its default
// connection limits, must still hold the connection and answer; with Node's 5 s keep-alive timeout it closed the
// connection in between and the client got a socket error (EPIPE, "other side closed") instead of the answer.
import { Agent, request, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

/** Idle time of the pooled connection before the next request takes it: inside undici's reuse window (hint − 2 s). */
const IDLE_MS = 2_000;
/** How long the client takes, once it holds the connection, before the request's first byte leaves. */
const HEAD_DELAY_MS = 4_500;
const BODY = '{"templateID":"base"}';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** POST /v2/sandboxes on the agent's connection; the head and body leave `delayMs` after the socket is assigned. */
function createSandbox(agent: Agent, delayMs: number): Promise<{ status: number; body: string; port: number }> {
  return new Promise((resolve, reject) => {
    const url = new URL("/v2/sandboxes", t.url);
    const req = request(url, { agent, method: "POST", headers: { "X-API-KEY": t.apiKey, "content-type": "application/json" } }, (res: IncomingMessage) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, port: req.socket?.localPort ?? 0 }));
    });
    req.on("error", reject);
    req.once("socket", () => void sleep(delayMs).then(() => req.end(BODY)));
  });
}

it("answers a request whose head arrives seconds after the client took an idle keep-alive connection", async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await createSandbox(agent, 0);
    expect(first.status).toBe(201);
    await sleep(IDLE_MS);
    const second = await createSandbox(agent, HEAD_DELAY_MS);
    // The same connection (the test would prove nothing on a fresh one), answered.
    expect(second.port).toBe(first.port);
    expect(second.status).toBe(201);
    expect((JSON.parse(second.body) as { sandboxID?: string }).sandboxID).toBeTruthy();
  } finally {
    agent.destroy();
  }
}, 30_000);
