// REST shapes and error handling over raw HTTP: what any client (not only the SDK) sees.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENVD_VERSION } from "@burrow/protocol";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { bodyLimitBytes: 4096 } });
});
afterAll(async () => {
  await t.close();
});

async function create(body: object = { templateID: "base" }, path = "/v2/sandboxes") {
  const res = await t.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

async function kill(id: string) {
  await t.api(`/sandboxes/${id}`, { method: "DELETE" });
}

describe("create", () => {
  it.each(["/v2/sandboxes", "/sandboxes"])("POST %s answers 201 with E2B's Sandbox", async (path) => {
    const { res, body } = await create({ templateID: "base", timeout: 30, secure: true }, path);
    expect(res.status).toBe(201);
    expect(body).toEqual({
      sandboxID: expect.stringMatching(/^[a-z0-9]+$/),
      templateID: "tplbase0000000000000",
      alias: "base",
      clientID: "burrow",
      envdVersion: ENVD_VERSION,
      envdAccessToken: expect.any(String),
      trafficAccessToken: null,
      // burrow.localhost:<port> where that name resolves to loopback (npm start sees to it), else null.
      domain: t.server.config.domain,
    });
    await kill(body["sandboxID"] as string);
  });

  it("accepts chunked bodies (as the SDK sends them)", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${t.url}/v2/sandboxes`, {
        method: "POST",
        headers: { "x-api-key": t.apiKey, "content-type": "application/json", "transfer-encoding": "chunked" },
      });
      req.on("response", (res) => {
        let data = "";
        res.on("data", (c) => (data += c));
        res.on("end", () => {
          void kill((JSON.parse(data) as { sandboxID: string }).sandboxID).then(() => resolve(res.statusCode!));
        });
      });
      req.on("error", reject);
      req.write('{"templateID":');
      req.end('"base"}');
    });
    expect(status).toBe(201);
  });

  it("rejects unknown templates, bad timeouts and unsupported features in E2B's shape", async () => {
    expect(await create({ templateID: "nope" })).toMatchObject({ res: { status: 404 }, body: { code: 404, message: "template 'nope' not found" } });
    expect(await create({ templateID: "base", timeout: 10 ** 7 })).toMatchObject({ res: { status: 400 }, body: { code: 400 } });
    expect(await create({ templateID: "base", timeout: -1 })).toMatchObject({ res: { status: 400 }, body: { code: 400 } });
    expect(await create({})).toMatchObject({ res: { status: 400 }, body: { code: 400 } });
    expect(await create({ templateID: "base", autoPause: "yes" })).toMatchObject({ res: { status: 400 }, body: { code: 400 } });
    expect(await create({ templateID: "base", network: { denyOut: ["0.0.0.0/0"] } })).toMatchObject({ res: { status: 501 } });
    expect(t.stub.sandboxes.size).toBe(0);
  });
});

describe("errors", () => {
  it("401 without or with a wrong key; X-API-KEY is case-insensitive; Bearer works", async () => {
    const variants: Array<Record<string, string>> = [{}, { "X-API-KEY": "e2b_wrong" }, { authorization: "Basic abc" }];
    for (const headers of variants) {
      const res = await fetch(`${t.url}/v2/sandboxes`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ code: 401, message: expect.any(String) });
    }
    expect((await fetch(`${t.url}/v2/sandboxes`, { headers: { "x-Api-kEy": t.apiKey } })).status).toBe(200);
    expect((await fetch(`${t.url}/v2/sandboxes`, { headers: { authorization: `Bearer ${t.apiKey}` } })).status).toBe(200);
  });

  it("health and metrics need no key", async () => {
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
    const metrics = await fetch(`${t.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("burrow_sandboxes_running");
  });

  it("malformed JSON → 400, oversized body → 413, unknown route → 404, all JSON", async () => {
    const bad = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 400 });
    const huge = await t.api("/v2/sandboxes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ templateID: "base", metadata: { x: "y".repeat(10_000) } }),
    });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ code: 413 });
    const unknown = await t.api("/nothing/here");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 404 });
    const unknownNoKey = await fetch(`${t.url}/nothing/here`);
    expect(unknownNoKey.status).toBe(404);
  });

  it("unknown or malformed sandbox ids → 404 with code 404", async () => {
    for (const id of ["doesnotexist", "UPPER-case", "%00", "a".repeat(90)]) {
      for (const [method, path] of [
        ["GET", `/sandboxes/${id}`],
        ["DELETE", `/sandboxes/${id}`],
        ["GET", `/sandboxes/${id}/metrics`],
        ["POST", `/v2/sandboxes/${id}/connect`],
      ] as const) {
        const res = await t.api(path, { method, ...(method === "POST" ? { headers: { "content-type": "application/json" }, body: "{}" } : {}) });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(await res.json()).toMatchObject({ code: 404 });
      }
    }
    const timeout = await t.api("/sandboxes/nope/timeout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ timeout: 5 }),
    });
    expect(timeout.status).toBe(404);
  });

  it("router-level failures (bad percent-escape, over-long id) answer in E2B's shape", async () => {
    for (const path of ["/sandboxes/%E0%A4%A", `/sandboxes/${"a".repeat(300)}`]) {
      const res = await t.api(path);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expect(await res.json()).toEqual({ code: res.status, message: expect.any(String) });
    }
  });

  it("JSON bodies are not type-coerced: wrong types are 400", async () => {
    for (const body of [
      { templateID: 5 },
      { templateID: "base", timeout: "30" },
      { templateID: "base", metadata: { a: 1 } },
      { templateID: "base", secure: 1 },
    ]) {
      const { res, body: answer } = await create(body as object);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(answer).toEqual({ code: 400, message: expect.stringMatching(/must be/) });
    }
    const timeout = await t.api("/sandboxes/nope/timeout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"timeout":"5"}',
    });
    expect(timeout.status).toBe(400);
  });

  it("unsupported endpoints answer 501 (404 first for unknown sandboxes)", async () => {
    const { body } = await create();
    const id = body["sandboxID"] as string;
    const post = (path: string) => t.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect((await post(`/sandboxes/${id}/pause`)).status).toBe(501);
    expect(await (await post(`/sandboxes/${id}/fork`)).json()).toMatchObject({ code: 501, message: expect.stringContaining("not supported") });
    expect((await post("/sandboxes/unknown/pause")).status).toBe(404);
    expect((await post("/v3/templates")).status).toBe(501);
    expect((await post(`/sandboxes/${id}/resume`)).status).toBe(409);
    await kill(id);
  });
});

describe("sandbox endpoints", () => {
  it("detail, timeout (may shorten), connect (only extends), metrics", async () => {
    const { body } = await create({ templateID: "base", timeout: 100, metadata: { a: "1" } });
    const id = body["sandboxID"] as string;
    const detail = (await (await t.api(`/sandboxes/${id}`)).json()) as Record<string, unknown>;
    expect(detail).toMatchObject({
      sandboxID: id,
      templateID: "tplbase0000000000000",
      alias: "base",
      clientID: "burrow",
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 1024,
      state: "running",
      envdVersion: ENVD_VERSION,
      metadata: { a: "1" },
      envdAccessToken: body["envdAccessToken"],
      allowInternetAccess: true,
      // burrow.localhost:<port> where that name resolves to loopback (npm start sees to it), else null.
      domain: t.server.config.domain,
    });
    const endAt = () => t.api(`/sandboxes/${id}`).then(async (r) => Date.parse(((await r.json()) as { endAt: string }).endAt));
    expect(await endAt()).toBeGreaterThan(Date.now() + 90_000);

    const post = (path: string, payload: object) =>
      t.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });
    const shortened = await post(`/sandboxes/${id}/timeout`, { timeout: 20 });
    expect(shortened.status).toBe(204);
    expect(await endAt()).toBeLessThan(Date.now() + 21_000);

    const connect = await post(`/v2/sandboxes/${id}/connect`, { timeout: 10 });
    expect(connect.status).toBe(200);
    expect(await connect.json()).toMatchObject({ sandboxID: id, envdAccessToken: body["envdAccessToken"] });
    expect(await endAt()).toBeGreaterThan(Date.now() + 15_000); // 10 s did not shorten it
    await post(`/sandboxes/${id}/connect`, { timeout: 200 });
    expect(await endAt()).toBeGreaterThan(Date.now() + 190_000);

    const metrics = (await (await t.api(`/sandboxes/${id}/metrics`)).json()) as Array<Record<string, unknown>>;
    expect(metrics.length).toBeGreaterThan(0);
    expect(metrics[0]).toEqual({
      timestamp: expect.any(String),
      timestampUnix: expect.any(Number),
      cpuCount: 2,
      cpuUsedPct: 1.5,
      memUsed: 64 * 1024 * 1024,
      memTotal: 512 * 1024 * 1024,
      memCache: 1024,
      diskUsed: 4096,
      diskTotal: 1024 * 1024 * 1024,
    });
    const future = Math.floor(Date.now() / 1000) + 3600;
    expect(await (await t.api(`/sandboxes/${id}/metrics?start=${future}`)).json()).toEqual([]);

    const del = await t.api(`/sandboxes/${id}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
  });

  it("template aliases", async () => {
    expect(await (await t.api("/templates/aliases/base")).json()).toEqual({ templateID: "tplbase0000000000000", public: false });
    const missing = await t.api("/templates/aliases/nope");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 404 });
  });
});

describe("list", () => {
  it("orders, paginates with X-Next-Token and counts running", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await create({ templateID: "base", metadata: { batch: "p", i: String(i) } })).body["sandboxID"] as string);
      await new Promise((r) => setTimeout(r, 3)); // distinct startedAt
    }
    try {
      const seen: string[] = [];
      let token: string | null = null;
      let pages = 0;
      do {
        const q = new URLSearchParams({ limit: "2", metadata: "batch=p" });
        if (token) q.set("nextToken", token);
        const res = await t.api(`/v2/sandboxes?${q}`);
        expect(res.status).toBe(200);
        expect(res.headers.get("x-total-running")).toBe("5");
        seen.push(...((await res.json()) as Array<{ sandboxID: string }>).map((s) => s.sandboxID));
        token = res.headers.get("x-next-token");
        pages++;
      } while (token);
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());

      const asc = (await (await t.api("/v2/sandboxes?order=asc&metadata=batch%3Dp")).json()) as Array<{ sandboxID: string }>;
      expect(asc.map((s) => s.sandboxID)).toEqual(ids);

      const paused = await t.api("/v2/sandboxes?state=paused");
      expect(await paused.json()).toEqual([]);
      expect(paused.headers.get("x-total-running")).toBeNull();
      const both = await t.api("/v2/sandboxes?state=running,paused&metadata=batch%3Dp");
      expect(((await both.json()) as unknown[]).length).toBe(5);

      expect(((await (await t.api("/v2/sandboxes?template=base&metadata=batch%3Dp")).json()) as unknown[]).length).toBe(5);
      expect(((await (await t.api("/v2/sandboxes?template=tplbase0000000000000&metadata=batch%3Dp")).json()) as unknown[]).length).toBe(5);
      expect(await (await t.api("/v2/sandboxes?template=other")).json()).toEqual([]);
      expect(await (await t.api(`/v2/sandboxes?startedAfter=${new Date(Date.now() + 60_000).toISOString()}`)).json()).toEqual([]);

      const v1 = (await (await t.api("/sandboxes?metadata=batch%3Dp")).json()) as unknown[];
      expect(v1.length).toBe(5);

      for (const bad of ["limit=0", "limit=101", "state=sleeping", "nextToken=%%%", "startedAfter=yesterday", "metadata=a%3Db%3Dc"]) {
        const res = await t.api(`/v2/sandboxes?${bad}`);
        expect(res.status, bad).toBe(400);
        expect(await res.json()).toMatchObject({ code: 400 });
      }
    } finally {
      for (const id of ids) await kill(id);
    }
  });

  it("decodes the SDK's multiply-encoded metadata filter", async () => {
    const { body } = await create({ templateID: "base", metadata: { a: "b c", "k&=": "v/=" } });
    try {
      // Exactly what e2b 2.51 puts on the wire for {a:'b c','k&=':'v/='}.
      const res = await t.api("/v2/sandboxes?metadata=a%3Db%252520c%26k%252526%25253D%3Dv%25252F%25253D");
      expect(((await res.json()) as Array<{ sandboxID: string }>).map((s) => s.sandboxID)).toEqual([body["sandboxID"]]);
    } finally {
      await kill(body["sandboxID"] as string);
    }
  });
});
