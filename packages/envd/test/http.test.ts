import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { fileSignature } from "../src/auth/signature.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildEnvd, initEnvd, sdkSandbox, setupEnvd, startEnvd } from "./helpers/envd-fixture.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
let url: string;
const UNAUTHORIZED = { code: 401, message: "unauthorized access, please provide a valid access token or method signing if supported" };

beforeAll(async () => {
  env = await setupEnvd();
  url = env.envd.url;
});
afterAll(async () => {
  await env?.cleanup();
});

const auth = () => ({ "X-Access-Token": env.token });

describe("access token", () => {
  test("health is open; RPC, /envs, /metrics need the token (401 JSON)", async () => {
    expect((await fetch(`${url}/health`)).status).toBe(204);
    for (const [path, init] of [
      ["/envs", {}],
      ["/metrics", {}],
      ["/process.Process/List", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }],
    ] as const) {
      const res = await fetch(`${url}${path}`, init);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual(UNAUTHORIZED);
      const wrong = await fetch(`${url}${path}`, { ...init, headers: { ...("headers" in init ? init.headers : {}), "X-Access-Token": "wrong" } });
      expect(wrong.status).toBe(401);
    }
    expect(await (await fetch(`${url}/envs`, { headers: auth() })).json()).toEqual({ SANDBOX_VAR: "sbx", OVERRIDE_ME: "sandbox" });
    const metrics = (await (await fetch(`${url}/metrics`, { headers: auth() })).json()) as Record<string, number>;
    expect(metrics.cpu_count).toBeGreaterThan(0);
    expect(metrics.mem_total).toBeGreaterThan(0);
    expect(metrics.disk_total).toBeGreaterThan(0);
  });

  test("isRunning via the SDK, and SDK calls fail with a wrong token", async () => {
    expect(await env.sandbox.isRunning()).toBe(true);
    const bad = sdkSandbox(url, "not-the-token");
    await expect(bad.commands.list()).rejects.toThrow(/unauthorized|401/i);
    await expect(bad.files.read("/etc/hostname")).rejects.toThrow();
  });

  test("later /init needs the current token", async () => {
    expect((await initEnvd(url, { envVars: { X: "1" } })).status).toBe(401);
    expect((await initEnvd(url, { envVars: { LATE: "yes" } }, auth())).status).toBe(204);
    expect(await (await fetch(`${url}/envs`, { headers: auth() })).json()).toMatchObject({ LATE: "yes" });
  });
});

describe("/files signatures", () => {
  let path: string;
  beforeAll(() => {
    path = join(env.user.home, "signed.txt");
    writeFileSync(path, "signed content");
  });
  const get = (q: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${url}/files?${new URLSearchParams(q)}`, { headers });

  test("valid signature (with and without expiration) reads without the header", async () => {
    const sig = fileSignature(path, "read", "", env.token);
    expect(await (await get({ path, signature: sig })).text()).toBe("signed content");
    const exp = Math.floor(Date.now() / 1000) + 60;
    const sig2 = fileSignature(path, "read", "", env.token, exp);
    expect((await get({ path, signature: sig2, signature_expiration: String(exp) })).status).toBe(200);
  });

  test("SDK downloadUrl/uploadUrl are accepted", async () => {
    const dl = await env.sandbox.downloadUrl(path, { useSignatureExpiration: 60 } as never);
    expect(await (await fetch(dl)).text()).toBe("signed content");
    const ul = await env.sandbox.uploadUrl(join(env.user.home, "via-url.txt"));
    const form = new FormData();
    form.append("file", new Blob(["uploaded"]), "via-url.txt");
    expect((await fetch(ul, { method: "POST", body: form })).status).toBe(200);
    expect(readFileSync(join(env.user.home, "via-url.txt"), "utf8")).toBe("uploaded");
  });

  test("expired, wrong, missing signature and wrong header: exact messages", async () => {
    const exp = Math.floor(Date.now() / 1000) - 10;
    const expired = await get({ path, signature: fileSignature(path, "read", "", env.token, exp), signature_expiration: String(exp) });
    expect(expired.status).toBe(401);
    expect(await expired.text()).toBe('{"code":401,"message":"signature is already expired"}');
    const wrongOp = await get({ path, signature: fileSignature(path, "write", "", env.token) });
    expect(await wrongOp.json()).toEqual({ code: 401, message: "invalid signature" });
    expect(await (await get({ path })).json()).toEqual({ code: 401, message: "missing signature query parameter" });
    expect(await (await get({ path }, { "X-Access-Token": "nope" })).json())
      .toEqual({ code: 401, message: "access token present in header but does not match" });
    const otherUser = await get({ path, username: "root", signature: fileSignature(path, "read", "", env.token) });
    expect(otherUser.status).toBe(401);
  });
});

describe("/files details", () => {
  test("Range, Content-Disposition, 404 and 400 bodies", async () => {
    const path = join(env.user.home, "range.txt");
    writeFileSync(path, "0123456789");
    const res = await fetch(`${url}/files?path=${encodeURIComponent(path)}`, { headers: { ...auth(), Range: "bytes=2-5" } });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe("bytes 2-5/10");
    expect(await res.text()).toBe("2345");
    const full = await fetch(`${url}/files?path=range.txt`, { headers: auth() });
    expect(full.headers.get("content-disposition")).toBe('inline; filename="range.txt"');
    const missing = await fetch(`${url}/files?path=/no/such`, { headers: auth() });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ code: 404, message: "path '/no/such' does not exist" });
    const dir = await fetch(`${url}/files?path=/tmp`, { headers: auth() });
    expect(dir.status).toBe(400);
    expect(((await dir.json()) as { code: number }).code).toBe(400);
  });

  test("multipart: ?path wins for one part; duplicate destinations are 400; dir destination is 400", async () => {
    const one = new FormData();
    one.append("file", new Blob(["x"]), "/ignored/name.txt");
    const r1 = await fetch(`${url}/files?path=chosen.txt`, { method: "POST", headers: auth(), body: one });
    expect(await r1.json()).toEqual([{ path: join(env.user.home, "chosen.txt"), name: "chosen.txt", type: "file" }]);
    const dup = new FormData();
    dup.append("file", new Blob(["1"]), "dup.txt");
    dup.append("file", new Blob(["2"]), "dup.txt");
    const r2 = await fetch(`${url}/files`, { method: "POST", headers: auth(), body: dup });
    expect(r2.status).toBe(400);
    const toDir = new FormData();
    toDir.append("file", new Blob(["1"]), "/tmp");
    expect((await fetch(`${url}/files`, { method: "POST", headers: auth(), body: toDir })).status).toBe(400);
  });

  test("raw upload without path, bad gzip, bad multipart are 400s and envd keeps serving", async () => {
    const noPath = await fetch(`${url}/files`, { method: "POST", headers: { ...auth(), "content-type": "application/octet-stream" }, body: "x" });
    expect(noPath.status).toBe(400);
    const badGzip = await fetch(`${url}/files?path=bad.gz`, {
      method: "POST", headers: { ...auth(), "content-type": "application/octet-stream", "content-encoding": "gzip" }, body: "not gzip",
    });
    expect(badGzip.status).toBe(400);
    expect(await badGzip.json()).toEqual({ code: 400, message: expect.stringMatching(/not valid gzip/) });
    // Nothing half-written is left behind.
    expect((await fetch(`${url}/files?path=bad.gz`, { headers: auth() })).status).toBe(404);
    const badMultipart = await fetch(`${url}/files`, {
      method: "POST", headers: { ...auth(), "content-type": "multipart/form-data; boundary=xyz" }, body: "--xyz\r\ngarbage",
    });
    expect(badMultipart.status).toBe(400);
    expect((await fetch(`${url}/health`)).status).toBe(204);
  });
});

describe("malformed input", () => {
  test("unknown path 404 JSON, wrong method 405, bad init JSON 400", async () => {
    const r = await fetch(`${url}/nope`, { headers: auth() });
    expect(r.status).toBe(404);
    expect(((await r.json()) as { code: number }).code).toBe(404);
    expect((await fetch(`${url}/envs`, { method: "DELETE", headers: auth() })).status).toBe(405);
    const bad = await fetch(`${url}/init`, { method: "POST", headers: auth(), body: "{not json" });
    expect(await bad.json()).toEqual({ code: 400, message: "request body is not valid JSON" });
    const huge = await fetch(`${url}/init`, { method: "POST", headers: auth(), body: "x".repeat(1536 * 1024) });
    expect(huge.status).toBe(413);
  });

  test("broken Connect envelopes and JSON get Connect errors", async () => {
    const unary = await fetch(`${url}/filesystem.Filesystem/Stat`, {
      method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: "{bad",
    });
    expect(unary.status).toBe(400);
    expect(((await unary.json()) as { code: string }).code).toBe("invalid_argument");
    const truncated = Buffer.concat([Buffer.from([0, 0, 0, 0, 100]), Buffer.from('{"path":"/"}')]);
    const stream = await fetch(`${url}/filesystem.Filesystem/WatchDir`, {
      method: "POST", headers: { ...auth(), "content-type": "application/connect+json" }, body: truncated,
    });
    const body = Buffer.from(await stream.arrayBuffer());
    expect(body[0]).toBe(2); // end-stream envelope
    expect(JSON.parse(body.subarray(5).toString()).error.code).toBe("invalid_argument");
  });

  test("malformed HTTP does not crash envd", async () => {
    await new Promise<void>((resolve) => {
      const req = request(`${url}/files?path=%ZZ`, { method: "GET", headers: auth() }, (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", () => resolve());
      req.end();
    });
    expect((await fetch(`${url}/health`)).status).toBe(204);
  });
});

describe("init token and startup", () => {
  test("with BURROW_ENVD_INIT_TOKEN, /init needs it (or the current token), and children do not inherit it", async () => {
    buildEnvd();
    const envd = await startEnvd({ BURROW_ENVD_INIT_TOKEN: "init-secret" });
    try {
      expect((await initEnvd(envd.url, { accessToken: "a", defaultUser: "root" })).status).toBe(401);
      expect((await initEnvd(envd.url, { accessToken: "a", defaultUser: "root" }, { "X-Access-Token": "init-secret" })).status).toBe(204);
      expect((await initEnvd(envd.url, { accessToken: "b" }, { "X-Access-Token": "a" })).status).toBe(204);
      expect((await initEnvd(envd.url, {}, { "X-Access-Token": "a" })).status).toBe(401);
      const r = await sdkSandbox(envd.url, "b").commands.run('echo "[$BURROW_ENVD_INIT_TOKEN]"; tr "\\0" "\\n" < /proc/$PPID/environ | grep -c init-secret || true');
      expect(r.stdout).toBe("[]\n0\n");
    } finally {
      await envd.stop();
    }
  });

  test("startup time and idle RSS are measured", async () => {
    buildEnvd();
    const envd = await startEnvd();
    try {
      const status = readFileSync(`/proc/${envd.pid}/status`, "utf8");
      const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1]);
      console.log(`envd startup ${envd.startupMs.toFixed(0)} ms, VmRSS ${kb("VmRSS")} kB, RssAnon ${kb("RssAnon")} kB`);
      expect(kb("VmRSS")).toBeGreaterThan(0);
      // node-pty is lazy: a fresh envd has not mapped pty.node
      expect(readFileSync(`/proc/${envd.pid}/maps`, "utf8")).not.toContain("pty.node");
    } finally {
      await envd.stop();
    }
  });
});
