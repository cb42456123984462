// Bad input against the real server, by raw fetch: every malformed request gets a clear error in the
// reference's shapes (REST `{"code":<int>,"message"}`, Connect `{"code":"<name>","message"}`, envd
// `{"code":<int>,"message"}`, the proxy's 502 JSON), and the server and the sandbox keep serving afterwards.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { NotFoundError, Sandbox } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts, TEMPLATE } from "./env.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

interface Answer {
  status: number;
  contentType: string | null;
  text: string;
  json: unknown;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get("content-type"), text, json };
}

/** The REST error shape: JSON, numeric code equal to the status, a non-empty message. */
function expectRestError(a: Answer, status: number | number[], message?: RegExp): void {
  const statuses = Array.isArray(status) ? status : [status];
  expect(statuses, a.text).toContain(a.status);
  expect(a.contentType).toMatch(/^application\/json/);
  expect(a.json).toMatchObject({ code: a.status, message: expect.any(String) });
  const msg = (a.json as { message: string }).message;
  expect(msg.length).toBeGreaterThan(0);
  if (message) expect(msg).toMatch(message);
}

/** The Connect unary error shape. */
function expectConnectError(a: Answer, code: string | string[]): void {
  expect(a.contentType, a.text).toMatch(/^application\/json/);
  const codes = Array.isArray(code) ? code : [code];
  expect(a.json).toMatchObject({ code: expect.any(String), message: expect.any(String) });
  expect(codes, a.text).toContain((a.json as { code: string }).code);
}

/** Connect envelope: flags, big-endian length, payload. */
function envelope(flags: number, payload: Uint8Array, declaredLength = payload.length): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, declaredLength);
  out.set(payload, 5);
  return out;
}

/** Parse a Connect streaming response into its envelopes. */
function envelopes(body: Uint8Array): { flags: number; json: unknown }[] {
  const out: { flags: number; json: unknown }[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const len = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    const payload = body.subarray(at + 5, at + 5 + len);
    out.push({ flags: body[at]!, json: JSON.parse(new TextDecoder().decode(payload)) });
    at += 5 + len;
  }
  expect(at).toBe(body.length);
  return out;
}

maybe("bad input", () => {
  const marker = `burrow-traversal-${randomBytes(6).toString("hex")}`;
  const hostFile = `/tmp/${marker}`;
  const env = () => burrowEnv();
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${env().apiUrl}${path}`, { ...init, headers: { "X-API-KEY": env().apiKey, ...init.headers } }).then(answer);
  let sbx: Sandbox;
  let token: string;
  const envd = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    fetch(`${env().sandboxUrl}${path}`, {
      ...init,
      headers: { "E2b-Sandbox-Id": sbx.sandboxId, "E2b-Sandbox-Port": "49983", "X-Access-Token": token, ...init.headers },
    }).then(answer);

  beforeAll(async () => {
    sbx = await Sandbox.create(TEMPLATE, { ...sdkOpts(), timeoutMs: 300_000 });
    const detail = await api(`/sandboxes/${sbx.sandboxId}`);
    token = (detail.json as { envdAccessToken: string }).envdAccessToken;
    expect(token).toBeTruthy();
  });
  afterAll(async () => {
    await sbx?.kill().catch(() => undefined);
  });

  describe("REST authentication", () => {
    test("a missing API key is 401 in E2B's shape, on every route", async () => {
      for (const [method, path] of [
        ["GET", "/v2/sandboxes"],
        ["POST", "/v2/sandboxes"],
        ["POST", "/sandboxes"],
        ["GET", "/sandboxes/abc"],
        ["DELETE", "/sandboxes/abc"],
        ["POST", "/sandboxes/abc/timeout"],
        ["POST", "/v2/sandboxes/abc/connect"],
      ] as const) {
        const res = await fetch(`${env().apiUrl}${path}`, {
          method,
          ...(method === "POST" ? { body: "{}", headers: { "content-type": "application/json" } } : {}),
        }).then(answer);
        expectRestError(res, 401);
      }
    });

    test("a wrong, empty or lookalike API key is 401", async () => {
      for (const key of ["e2b_0000000000000000000000000000000000000000", `${env().apiKey}x`, env().apiKey.slice(0, -1), " "]) {
        expectRestError(await fetch(`${env().apiUrl}/v2/sandboxes`, { headers: { "X-API-KEY": key } }).then(answer), 401);
      }
      await expect(Sandbox.list({ ...sdkOpts(), apiKey: "e2b_1111111111111111111111111111111111111111" }).nextItems()).rejects.toThrow(
        /401|auth/i,
      );
    });

    test("the key header is case-insensitive and a bearer token works", async () => {
      expect((await fetch(`${env().apiUrl}/v2/sandboxes`, { headers: { "x-api-key": env().apiKey } })).status).toBe(200);
      expect((await fetch(`${env().apiUrl}/v2/sandboxes`, { headers: { authorization: `Bearer ${env().apiKey}` } })).status).toBe(200);
    });
  });

  describe("REST bodies and ids", () => {
    const create = (body: string, contentType = "application/json") =>
      api("/v2/sandboxes", { method: "POST", body, headers: { "content-type": contentType } });

    test("malformed JSON is 400", async () => {
      for (const body of ['{"templateID": "base"', "{templateID: base}", "", "null", "[]", '"base"']) {
        expectRestError(await create(body), 400);
      }
    });

    test("wrong types and missing fields are 400", async () => {
      for (const body of [
        {},
        { templateID: 5 },
        { templateID: "base", timeout: -1 },
        { templateID: "base", timeout: "soon" },
        { templateID: "base", timeout: 10_000_000 },
        { templateID: "base", metadata: { a: 1 } },
        { templateID: "base", envVars: "A=1" },
        { templateID: "base", allow_internet_access: "yes" },
      ]) {
        expectRestError(await create(JSON.stringify(body)), 400);
      }
    });

    test("a non-JSON content type is refused with 415 or 400", async () => {
      expectRestError(await create("templateID=base", "application/x-www-form-urlencoded"), [400, 415]);
      expectRestError(await create('{"templateID":"base"}', "text/plain"), [400, 415]);
    });

    test("an unknown template is a clear not-found error naming it", async () => {
      expectRestError(await create(JSON.stringify({ templateID: "no-such-template-abc" })), [400, 404], /no-such-template-abc/);
      expectRestError(await create(JSON.stringify({ templateID: "../../etc" })), [400, 404]);
      expectRestError(await create(JSON.stringify({ templateID: "" })), [400, 404]);
    });

    test("an oversized body is 413 in E2B's shape", async () => {
      const huge = JSON.stringify({ templateID: "base", metadata: { big: "x".repeat(2 * 1024 * 1024) } });
      expectRestError(await create(huge), 413);
    });

    test("a client still uploading an oversized body gets its 413, not a broken connection", async () => {
      // The body is sent in two parts with a pause between them: a server that answers and closes at once makes
      // the second write fail (EPIPE/reset) before the client has read anything.
      const url = new URL(`${env().apiUrl}/v2/sandboxes`);
      const part = Buffer.alloc(1024 * 1024, 0x20);
      const total = part.length * 3;
      const result = await new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
        const req = request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { "X-API-KEY": env().apiKey, "content-type": "application/json", "content-length": total },
        });
        req.once("error", reject);
        req.once("response", (res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => (body += chunk.toString()));
          res.once("end", () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
        });
        req.write(part);
        setTimeout(() => {
          req.write(part);
          setTimeout(() => req.end(part), 200);
        }, 200);
      });
      expect(result.status).toBe(413);
      expect(JSON.parse(result.body)).toMatchObject({ code: 413, message: expect.stringMatching(/larger than/) });
      expect(result.connection).not.toBe("close");
    });

    test("a huge declared body is refused at once, without being read", async () => {
      const url = new URL(`${env().apiUrl}/v2/sandboxes`);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { "X-API-KEY": env().apiKey, "content-type": "application/json", "content-length": 1024 * 1024 * 1024 },
        });
        req.once("error", reject);
        req.once("response", (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        });
        req.flushHeaders();
      });
      expect(status).toBe(413);
    });

    test("bad and unknown sandbox ids are 404 (400 or 414 when malformed) in E2B's shape", async () => {
      for (const id of ["nosuchsandbox", "UPPER-case", "..%2F..%2Fetc%2Fpasswd", "%00", "a".repeat(300), "%E2%9C%93", "%E0%A4%A", "%"]) {
        expectRestError(await api(`/sandboxes/${id}`), [400, 404, 414]);
        expectRestError(await api(`/sandboxes/${id}`, { method: "DELETE" }), [400, 404, 414]);
        expectRestError(
          await api(`/sandboxes/${id}/timeout`, { method: "POST", body: '{"timeout":10}', headers: { "content-type": "application/json" } }),
          [400, 404, 414],
        );
        expectRestError(
          await api(`/v2/sandboxes/${id}/connect`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } }),
          [400, 404, 414],
        );
        expectRestError(await api(`/sandboxes/${id}/metrics`), [400, 404, 414]);
      }
    });

    test("bad timeout bodies are 400", async () => {
      for (const body of ["{", '{"timeout":-5}', '{"timeout":"x"}', "{}"]) {
        expectRestError(
          await api(`/sandboxes/${sbx.sandboxId}/timeout`, { method: "POST", body, headers: { "content-type": "application/json" } }),
          400,
        );
      }
    });

    test("unknown routes and methods are 404/405 JSON", async () => {
      expectRestError(await api("/v9/nothing"), [404]);
      expectRestError(await api("/v2/sandboxes", { method: "PATCH" }), [404, 405]);
    });
  });

  describe("gateway routing", () => {
    const raw = (headers: Record<string, string>, path = "/health") =>
      fetch(`${env().sandboxUrl}${path}`, { headers }).then(answer);

    test("an unknown or malformed E2b-Sandbox-Id is the proxy's 502 JSON", async () => {
      for (const id of ["nosuchsandbox00000000", "../../etc", "A B", "x".repeat(500)]) {
        const res = await raw({ "E2b-Sandbox-Id": id });
        expect(res.status).toBe(502);
        expect(res.json).toEqual({ sandboxId: id, message: "The sandbox was not found", code: 502 });
      }
    });

    test("a bad E2b-Sandbox-Port is 400 JSON", async () => {
      for (const port of ["abc", "0", "70000", "-1"]) {
        expectRestError(await raw({ "E2b-Sandbox-Id": sbx.sandboxId, "E2b-Sandbox-Port": port }), 400);
      }
    });

    test("a forged signature routes nowhere: 502, not another sandbox's file", async () => {
      const res = await fetch(`${env().sandboxUrl}/files?path=%2Fetc%2Fpasswd&signature=v1_forged`).then(answer);
      expect(res.status).toBe(502);
      expect(res.json).toMatchObject({ message: "The sandbox was not found", code: 502 });
    });

    test("a bad port in a sandbox Host name is 400", async () => {
      const status = await new Promise<number>((resolve, reject) => {
        const base = new URL(env().sandboxUrl);
        const req = request({ host: base.hostname, port: base.port, path: "/health", headers: { host: "99999-abc.localhost" } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on("error", reject);
        req.end();
      });
      expect(status).toBe(400);
    });
  });

  describe("envd through the gateway", () => {
    test("no or a wrong access token on RPC routes is 401 in envd's shape", async () => {
      const body = JSON.stringify({});
      const headers = { "content-type": "application/json", "connect-protocol-version": "1" };
      for (const t of [undefined, "wrong-token"]) {
        const res = await fetch(`${env().sandboxUrl}/process.Process/List`, {
          method: "POST",
          body,
          headers: { ...headers, "E2b-Sandbox-Id": sbx.sandboxId, ...(t ? { "X-Access-Token": t } : {}) },
        }).then(answer);
        expect(res.status).toBe(401);
        expect(res.json).toEqual({
          code: 401,
          message: "unauthorized access, please provide a valid access token or method signing if supported",
        });
      }
    });

    test("/files without a token or signature is 401; a wrong header token is named", async () => {
      const noAuth = await fetch(`${env().sandboxUrl}/files?path=/etc/hostname`, { headers: { "E2b-Sandbox-Id": sbx.sandboxId } }).then(answer);
      expect(noAuth.status).toBe(401);
      expect(noAuth.json).toEqual({ code: 401, message: "missing signature query parameter" });
      const wrong = await envd("/files?path=/etc/hostname", { headers: { "X-Access-Token": "nope" } });
      expect(wrong.json).toEqual({ code: 401, message: "access token present in header but does not match" });
    });

    test("unary RPC: malformed JSON, wrong types, unknown methods, wrong content type", async () => {
      const rpc = (path: string, body: string, contentType = "application/json") =>
        envd(path, { method: "POST", body, headers: { "content-type": contentType, "connect-protocol-version": "1" } });
      expectConnectError(await rpc("/filesystem.Filesystem/Stat", '{"path":'), "invalid_argument");
      expectConnectError(await rpc("/filesystem.Filesystem/Stat", '{"path":42}'), "invalid_argument");
      expectConnectError(await rpc("/filesystem.Filesystem/ListDir", '{"path":"/","depth":"deep"}'), "invalid_argument");
      expectConnectError(await rpc("/process.Process/SendSignal", '{"process":{"pid":"one"},"signal":"SIGNAL_SIGKILL"}'), "invalid_argument");
      const unknown = await rpc("/process.Process/Nope", "{}");
      expect(unknown.status).toBe(404);
      const wrongType = await rpc("/filesystem.Filesystem/Stat", '{"path":"/"}', "text/plain");
      expect(wrongType.status).toBe(415);
      // Streaming methods called as unary (no envelope) are refused, not mis-parsed.
      const asUnary = await rpc("/process.Process/Start", '{"process":{"cmd":"/bin/true"}}');
      expect(asUnary.status).toBeGreaterThanOrEqual(400);
    });

    test("streaming RPC: truncated, oversized-length and compressed envelopes end with a Connect error", async () => {
      const start = new TextEncoder().encode(JSON.stringify({ process: { cmd: "/bin/sh", args: ["-c", "touch /tmp/should-not-run"] } }));
      const stream = (body: Uint8Array<ArrayBuffer>) =>
        fetch(`${env().sandboxUrl}/process.Process/Start`, {
          method: "POST",
          body,
          headers: {
            "content-type": "application/connect+json",
            "connect-protocol-version": "1",
            "E2b-Sandbox-Id": sbx.sandboxId,
            "X-Access-Token": token,
          },
        });
      for (const body of [
        envelope(0, start.subarray(0, 10), start.length), // truncated payload
        start.subarray(0, 3), // truncated header
        envelope(0, start, 0x7fffffff).subarray(0, 20), // absurd declared length
        envelope(1, start), // compressed flag without compression
        envelope(0, new TextEncoder().encode("{not json")),
      ]) {
        const res = await stream(body);
        // Connect streams report errors as 200 + an end-stream envelope; an HTTP error status is also acceptable.
        if (res.status === 200) {
          expect(res.headers.get("content-type")).toBe("application/connect+json");
          const frames = envelopes(new Uint8Array(await res.arrayBuffer()));
          const end = frames.at(-1)!;
          expect(end.flags).toBe(2);
          expect(end.json).toMatchObject({ error: { code: expect.stringMatching(/^(invalid_argument|resource_exhausted|internal|unimplemented)$/) } });
        } else {
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          await res.arrayBuffer();
        }
      }
      expect((await sbx.commands.run("test -e /tmp/should-not-run && echo ran || echo not-run")).stdout).toBe("not-run\n");
    });

    test("a wrong content type on a streaming route is 415", async () => {
      const res = await envd("/process.Process/Start", { method: "POST", body: "x", headers: { "content-type": "text/plain" } });
      expect(res.status).toBe(415);
    });

    test("an oversized Connect message is refused", async () => {
      const big = JSON.stringify({ path: "x".repeat(40 * 1024 * 1024) });
      const res = await envd("/filesystem.Filesystem/Stat", {
        method: "POST",
        body: big,
        headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      }).catch((err: unknown) => err);
      // Either a Connect error (resource_exhausted) or the connection is closed on the oversized upload.
      if (!(res instanceof Error)) expectConnectError(res as Answer, ["resource_exhausted", "invalid_argument"]);
    });

    test("/files: missing path, a directory, bad encodings", async () => {
      const noPath = await envd("/files");
      expect(noPath.status).toBe(400);
      expect(noPath.json).toMatchObject({ code: 400, message: expect.any(String) });
      const dir = await envd("/files?path=/home/user");
      expect(dir.json).toMatchObject({ code: 400 });
      const missing = await envd("/files?path=/no/such/file");
      expect(missing.json).toEqual({ code: 404, message: expect.stringContaining("/no/such/file") });
      const badGzip = await envd("/files?path=/tmp/g.txt", {
        method: "POST",
        body: "definitely not gzip",
        headers: { "content-type": "application/octet-stream", "content-encoding": "gzip" },
      });
      expect(badGzip.status).toBe(400);
      expect(badGzip.json).toMatchObject({ code: 400 });
      const badEncoding = await envd("/files?path=/tmp/g.txt", {
        method: "POST",
        body: "x",
        headers: { "content-type": "application/octet-stream", "content-encoding": "br" },
      });
      expect([400, 406, 415]).toContain(badEncoding.status);
      expect(badEncoding.json).toMatchObject({ code: badEncoding.status });
      const badMultipart = await envd("/files?path=/tmp/m.txt", {
        method: "POST",
        body: "--xyz\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\ntruncated",
        headers: { "content-type": "multipart/form-data; boundary=xyz" },
      });
      expect(badMultipart.status).toBe(400);
      expect(badMultipart.json).toMatchObject({ code: 400 });
      const noBoundary = await envd("/files?path=/tmp/m.txt", { method: "POST", body: "x", headers: { "content-type": "multipart/form-data" } });
      expect(noBoundary.status).toBe(400);
      const nul = await envd("/files?path=/tmp/a%00b");
      expect(nul.json).toMatchObject({ code: 400 });
      expect(await sbx.files.exists("/tmp/g.txt")).toBe(false);
    });
  });

  describe("path traversal stays inside the sandbox", () => {
    beforeAll(() => {
      writeFileSync(hostFile, "host secret");
      writeFileSync(`${hostFile}-host-only`, "host only");
    });
    afterAll(() => {
      for (const suffix of ["", "-written", "-host-only"]) rmSync(`${hostFile}${suffix}`, { force: true });
    });

    test("reads with ../ reach the sandbox's own files, never the host's", async () => {
      for (const path of [`../../../../../../../..${hostFile}`, `/home/user/../../..${hostFile}`, `~/../../../../${hostFile}`]) {
        await expect(sbx.files.read(path, { user: "root" })).rejects.toBeInstanceOf(NotFoundError);
        const res = await envd(`/files?path=${encodeURIComponent(path)}&username=root`);
        expect(res.status).toBe(404);
        expect(res.text).not.toContain("host secret");
      }
      // The same traversal to a file that exists in the sandbox gives the sandbox's copy.
      await sbx.files.write(hostFile, "sandbox copy", { user: "root" });
      expect(await sbx.files.read(`../../../../../..${hostFile}`, { user: "root" })).toBe("sandbox copy");
      expect(readFileSync(hostFile, "utf8")).toBe("host secret");
      const viaGateway = await fetch(`${env().sandboxUrl}/files/../../../..${hostFile}`, {
        headers: { "E2b-Sandbox-Id": sbx.sandboxId, "X-Access-Token": token },
      }).then(answer);
      expect(viaGateway.text).not.toContain("host secret");
    });

    test("writes with ../ land inside the sandbox", async () => {
      await sbx.files.write(`../../../../../..${hostFile}-written`, "w", { user: "root" });
      expect(existsSync(`${hostFile}-written`)).toBe(false);
      expect((await sbx.commands.run(`cat ${hostFile}-written`, { user: "root" })).stdout).toBe("w");
    });

    test("/proc tricks see the sandbox's processes only", async () => {
      const viaProc = await sbx.files.read(`/proc/1/root${hostFile}`, { user: "root" }).catch(() => "refused");
      expect(viaProc).not.toBe("host secret");
      const hostPid = process.pid;
      const res = await sbx.commands.run(`cat /proc/${hostPid}/cmdline 2>/dev/null | tr '\\0' ' ' || true`, { user: "root" });
      expect(res.stdout).not.toContain("vitest");
    });

    test("RPC paths with ../ are resolved inside the sandbox", async () => {
      expect(await sbx.files.exists(`../../../..${hostFile}-host-only`)).toBe(false);
      const listed = (await sbx.files.list("../../../../tmp", { user: "root" })).map((e) => e.name);
      expect(listed).not.toContain(`${marker}-host-only`);
    });
  });

  test("afterwards the server and the sandbox still serve", async () => {
    expect((await fetch(`${env().apiUrl}/health`)).status).toBeLessThan(300);
    expect((await sbx.commands.run("echo still-alive")).stdout).toBe("still-alive\n");
    expect(await sbx.files.read(hostFile, { user: "root" })).toBe("sandbox copy");
    const listed = await Sandbox.list({ ...sdkOpts() }).nextItems();
    expect(listed.map((s) => s.sandboxId)).toContain(sbx.sandboxId);
    const fresh = await Sandbox.create(TEMPLATE, sdkOpts());
    try {
      expect((await fresh.commands.run("echo ok")).stdout).toBe("ok\n");
    } finally {
      await fresh.kill();
    }
  });
});
