// What the gateway does with a sandbox that answers broken HTTP: every unusable answer becomes a 502 naming the
// sandbox, printable-but-odd parts are repaired, valid answers pass unchanged, and the server never goes down.
// The "sandbox" port here is a raw TCP server that sends whatever bytes the request path asks for.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { guarded } from "../src/gateway/guarded.js";
import { rawPath, startRawUpstream, type RawUpstream } from "./helpers/raw-upstream.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

/** Requests to this port of a stub sandbox go to the raw upstream. */
const RAW_PORT = 7777;

let t: TestServer;
let rawUpstream: RawUpstream;
let sandboxId = "";
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  rawUpstream = await startRawUpstream();
  const logger = pino({ level: "warn" }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  t = await startTestServer({
    deps: {
      logger,
      upstream: (record, port) => (port === RAW_PORT ? { host: "127.0.0.1", port: rawUpstream.port } : t.stub.upstream(record, port)),
    },
  });
  const res = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"templateID":"base"}' });
  sandboxId = ((await res.json()) as { sandboxID: string }).sandboxID;
});
afterAll(async () => {
  await t.close();
  await rawUpstream.close();
});

interface Answer {
  status: number;
  statusMessage: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  /** Set when the body broke off (the gateway dropped the connection mid-answer). */
  bodyError?: string;
}

function viaGateway(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${t.url}${path}`, { agent: false, headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(RAW_PORT), ...headers } }, (res) => {
      let body = "";
      const answer = () => ({ status: res.statusCode!, statusMessage: res.statusMessage!, headers: res.headers, rawHeaders: res.rawHeaders, body });
      res.setEncoding("latin1");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve(answer()));
      res.on("error", (err) => resolve({ ...answer(), bodyError: err.message }));
    });
    req.on("error", reject);
    req.end();
  });
}

const invalid = (port = RAW_PORT) => ({
  sandboxId,
  message: `The sandbox ${sandboxId} answered on port ${port} with an invalid HTTP response`,
  port,
  code: 502,
});

async function serverStillServes(): Promise<void> {
  expect((await fetch(`${t.url}/health`)).status).toBe(200);
  const echo = await fetch(`${t.url}/after`, { headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": "8080" } });
  expect(await echo.json()).toMatchObject({ sandboxId, url: "/after" });
}

describe("a sandbox answering with an unusable response", () => {
  const unusable: Array<[string, string]> = [
    ["status 042", "HTTP/1.1 042 X\r\ncontent-length: 0\r\n\r\n"],
    ["status 000", "HTTP/1.1 000 X\r\ncontent-length: 0\r\n\r\n"],
    ["status 600", "HTTP/1.1 600 X\r\ncontent-length: 0\r\n\r\n"],
    ["status 999", "HTTP/1.1 999 Nope\r\ncontent-length: 0\r\n\r\n"],
    ["a 101 nobody asked for", "HTTP/1.1 101 Switching Protocols\r\n\r\n"],
    ["a four-digit status", "HTTP/1.1 1000 X\r\ncontent-length: 0\r\n\r\n"],
    ["a control character in a header value", "HTTP/1.1 200 OK\r\nx-a: a\x01b\r\ncontent-length: 0\r\n\r\n"],
    ["NUL in a header value", "HTTP/1.1 200 OK\r\nx-a: a\x00b\r\ncontent-length: 0\r\n\r\n"],
    ["a space in a header name", "HTTP/1.1 200 OK\r\nx a: b\r\ncontent-length: 0\r\n\r\n"],
    ["a bare LF", "HTTP/1.1 200 OK\nx-a: b\ncontent-length: 0\n\n"],
    ["conflicting lengths", "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab"],
    ["content-length with chunked", "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"],
    ["an oversized head", rawPath("HTTP/1.1 200 OK\r\nx-a: ", { fill: 20_000, tail: "\r\ncontent-length: 0\r\n\r\n" })],
    ["no HTTP at all", "hello, I am not a web server\r\n\r\n"],
  ].map(([name, bytes]) => [name!, bytes!.startsWith("/raw/") ? bytes! : rawPath(bytes!)]);

  it.each(unusable)("answers 502 for %s and keeps serving", async (_name, bytes) => {
    const answer = await viaGateway(bytes);
    expect(answer.status).toBe(502);
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(answer.body)).toEqual(invalid());
    await serverStillServes();
  });

  it("logs a warning naming the sandbox and the cause", async () => {
    logs.length = 0;
    await viaGateway(rawPath("HTTP/1.1 042 X\r\ncontent-length: 0\r\n\r\n"));
    await viaGateway(rawPath("HTTP/1.1 200 OK\r\nx-a: a\x01b\r\n\r\n"));
    const warnings = logs.filter((l) => l["msg"] === "sandbox answered with an invalid HTTP response");
    expect(warnings.map((w) => [w["sandboxId"], w["port"]])).toEqual([
      [sandboxId, RAW_PORT],
      [sandboxId, RAW_PORT],
    ]);
    expect(warnings[0]!["cause"]).toMatch(/status 42/);
    expect(warnings[1]!["cause"]).toMatch(/^HPE_INVALID_HEADER_TOKEN/);
  });

  it("answers 502 when the sandbox closes before a complete head, and drops the client when it breaks off mid-body", async () => {
    for (const bytes of ["", "HTTP/1.1 200 OK\r\nx-a: b"]) {
      const answer = await viaGateway(rawPath(bytes));
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.body)).toMatchObject({ sandboxId, code: 502 });
    }
    const cut = await viaGateway(rawPath("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"));
    expect(cut.status).toBe(200);
    expect(cut.bodyError).toBeDefined();
    // A broken chunk in the same packet as a valid head: the head still reaches the client before the drop.
    const broken = await viaGateway(rawPath("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\nZZ\r\n"));
    expect(broken.status).toBe(200);
    expect(broken.bodyError).toBeDefined();
    await serverStillServes();
  });

  it("delivers a complete answer even when garbage follows it", async () => {
    const a = await viaGateway(rawPath("HTTP/1.1 204 No Content\r\nx-a: b\r\n\r\nthis is not a response"));
    expect([a.status, a.headers["x-a"], a.body, a.bodyError]).toEqual([204, "b", "", undefined]);
    const b = await viaGateway(rawPath("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 042 X\r\n\r\n"));
    expect([b.status, b.body, b.bodyError]).toEqual([200, "ok", undefined]);
  });
});

describe("a sandbox answering with odd but usable responses", () => {
  it("replaces a reason phrase holding control characters with the standard one", async () => {
    const a = await viaGateway(rawPath("HTTP/1.1 200 O\x01K\r\ncontent-length: 2\r\n\r\nok"));
    expect([a.status, a.statusMessage, a.body]).toEqual([200, "OK", "ok"]);
    const b = await viaGateway(rawPath("HTTP/1.1 404 \x00\x7f\x1b[31m\r\ncontent-length: 0\r\n\r\n"));
    expect([b.status, b.statusMessage]).toEqual([404, "Not Found"]);
    // A status without a standard phrase gets an empty one.
    const c = await viaGateway(rawPath("HTTP/1.1 299 \x07\r\ncontent-length: 0\r\n\r\n"));
    expect([c.status, c.statusMessage]).toEqual([299, ""]);
  });

  it("passes valid answers unchanged: status, reason, repeated and obs-text headers, body", async () => {
    const a = await viaGateway(
      rawPath("HTTP/1.1 418 I'm a teapot\r\nX-Custom: a\xffb\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\ncontent-length: 5\r\n\r\nhello"),
    );
    expect([a.status, a.statusMessage, a.body]).toEqual([418, "I'm a teapot", "hello"]);
    expect(a.headers["x-custom"]).toBe("a\xffb");
    expect(a.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
    // Interim 1xx answers are skipped; the final one is proxied.
    const b = await viaGateway(rawPath("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok"));
    expect([b.status, b.statusMessage, b.body]).toEqual([201, "Created", "ok"]);
    // An HTTP/1.0 close-delimited body.
    const c = await viaGateway(rawPath("HTTP/1.0 200 OK\r\n\r\nuntil close"));
    expect([c.status, c.body]).toEqual([200, "until close"]);
  });
});

describe("upgrades answered badly", () => {
  function upgrade(path: string): Promise<{ kind: "upgrade" | "response"; status: number; statusMessage: string; body: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${t.url}${path}`, {
        agent: false,
        headers: { "E2b-Sandbox-Id": sandboxId, "E2b-Sandbox-Port": String(RAW_PORT), connection: "Upgrade", upgrade: "websocket" },
      });
      req.on("upgrade", (res, socket) => {
        socket.destroy();
        resolve({ kind: "upgrade", status: res.statusCode!, statusMessage: res.statusMessage!, body: "" });
      });
      req.on("response", (res) => {
        let body = "";
        res.setEncoding("latin1");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ kind: "response", status: res.statusCode!, statusMessage: res.statusMessage!, body }));
      });
      req.on("error", reject);
      req.end();
    });
  }

  it("answers 502 for unusable handshakes and repairs reason phrases", async () => {
    for (const bytes of ["HTTP/1.1 042 X\r\ncontent-length: 0\r\n\r\n", "HTTP/1.1 101 OK\r\nx a: b\r\n\r\n", "garbage\r\n\r\n"]) {
      const answer = await upgrade(rawPath(bytes));
      expect([answer.kind, answer.status]).toEqual(["response", 502]);
      expect(JSON.parse(answer.body)).toEqual(invalid());
    }
    const switched = await upgrade(rawPath("HTTP/1.1 101 Sw\x01itching\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
    expect(switched).toMatchObject({ kind: "upgrade", status: 101, statusMessage: "Switching Protocols" });
    const declined = await upgrade(rawPath("HTTP/1.1 403 \x02\r\ncontent-length: 2\r\n\r\nno"));
    expect(declined).toEqual({ kind: "response", status: 403, statusMessage: "Forbidden", body: "no" });
    // Bytes above 0x7f in a valid head reach the client unchanged (not re-encoded as UTF-8).
    const obsText = await upgrade(rawPath("HTTP/1.1 101 Sw\xe9tch\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
    expect(obsText).toMatchObject({ kind: "upgrade", status: 101, statusMessage: "Sw\xe9tch" });
    await serverStillServes();
  });
});

describe("guarded", () => {
  it("hands a listener's exception to the fault handler, and runs the last resort when that throws too", () => {
    const seen: string[] = [];
    guarded(
      () => {
        throw new Error("boom");
      },
      (err) => seen.push((err as Error).message),
      () => seen.push("last"),
    )();
    guarded(
      () => {
        throw new Error("boom");
      },
      () => {
        throw new Error("again");
      },
      () => seen.push("last"),
    )();
    guarded((x: number) => seen.push(`ok ${x}`), () => seen.push("fault"), () => seen.push("last"))(1);
    expect(seen).toEqual(["boom", "last", "ok 1"]);
  });
});
