// The model gateway on the e2e server, against fake providers on loopback: failover at connect, on 5xx, 429 and a
// hang; the circuit breaker opening and recovering; SSE passed through byte for byte and unbuffered; a provider
// breaking off mid-stream; keys injected and never answered; budgets; usage. Calls come from the host side with the
// API key (sandboxes calling http://models.burrow: sandbox-gateway.test.ts).
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { Secret } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";
import { ANTHROPIC_SSE_EVENTS, FakeProvider, OPENAI_SSE_EVENTS } from "./fake-provider.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const env = burrowEnv();
  const res = await fetch(`${env.apiUrl}${path}`, {
    method,
    headers: { "x-api-key": env.apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

interface Exchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

let gatewayUrl = "";

/** A call to the gateway as a host client; `onFirstChunk` runs when the first body bytes arrive. */
function call(path: string, body: unknown, opts: { headers?: Record<string, string>; onFirstChunk?: () => void; key?: string | null } = {}): Promise<Exchange> {
  const key = opts.key === undefined ? burrowEnv().apiKey : opts.key;
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(`${gatewayUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}), ...opts.headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => {
        if (chunks.length === 0) opts.onFirstChunk?.();
        chunks.push(c);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(payload);
  });
}

const unique = (stem: string) => `${stem}-${randomBytes(3).toString("hex")}`;
const fakes: FakeProvider[] = [];
const providers: string[] = [];

async function fake(name: string): Promise<FakeProvider> {
  const f = await new FakeProvider(name).start();
  fakes.push(f);
  return f;
}

async function addProvider(body: Record<string, unknown>): Promise<void> {
  const r = await api("POST", "/burrow/v1/models/providers", body);
  expect(r.status, r.text).toBe(201);
  providers.push(body.name as string);
}

maybe("model gateway", () => {
  beforeAll(async () => {
    const r = await api("GET", "/burrow/v1/models/gateway");
    expect(r.status).toBe(200);
    gatewayUrl = r.json.url;
    expect(gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
  afterEach(async () => {
    for (const name of providers.splice(0)) await api("DELETE", `/burrow/v1/models/providers/${name}`);
    await Promise.all(fakes.splice(0).map((f) => f.close()));
    await api("PUT", "/burrow/v1/models/settings", { attemptTimeoutMs: 60_000, breakerFailures: 5, breakerBackoffMs: 30_000, sandboxBudget: null, keyBudget: null });
  });
  afterAll(async () => {
    for (const name of providers.splice(0)) await api("DELETE", `/burrow/v1/models/providers/${name}`);
  });

  test("providers by REST: created, listed and changed without their key, duplicates 409, bad input 400, unknown 404", async () => {
    const name = unique("p");
    const r = await api("POST", "/burrow/v1/models/providers", { name, kind: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-never-shown", models: ["m1"] });
    expect(r.status, r.text).toBe(201);
    providers.push(name);
    expect(r.json).toMatchObject({ name, kind: "openai", apiKey: { source: "literal" }, models: ["m1"], priority: 0, weight: 1, circuit: "closed" });
    expect((await api("POST", "/burrow/v1/models/providers", { name, kind: "openai", baseUrl: "http://x/v1", models: ["m"] })).status).toBe(409);
    const listed = await api("GET", "/burrow/v1/models/providers");
    expect(listed.json.map((p: { name: string }) => p.name)).toContain(name);
    expect(listed.text).not.toContain("sk-never-shown");
    const patched = await api("PATCH", `/burrow/v1/models/providers/${name}`, { priority: 3, models: ["m1", "m2"] });
    expect(patched.json).toMatchObject({ priority: 3, models: ["m1", "m2"], apiKey: { source: "literal" } });
    for (const bad of [
      { name: "Bad Name", kind: "openai", baseUrl: "http://x/v1", models: ["m"] },
      { name: unique("p"), kind: "gemini", baseUrl: "http://x/v1", models: ["m"] },
      { name: unique("p"), kind: "openai", baseUrl: "ftp://x", models: ["m"] },
      { name: unique("p"), kind: "openai", baseUrl: "http://x/v1", models: [] },
      { name: unique("p"), kind: "openai", baseUrl: "http://x/v1", models: ["m"], weight: 0 },
      { name: unique("p"), kind: "openai", baseUrl: "http://x/v1", models: ["m"], apiKey: "" },
    ]) {
      const a = await api("POST", "/burrow/v1/models/providers", bad);
      expect(a.status, JSON.stringify(bad)).toBe(400);
      expect(a.json).toMatchObject({ code: 400, message: expect.any(String) });
    }
    expect((await api("DELETE", `/burrow/v1/models/providers/${unique("none")}`)).status).toBe(404);
    expect((await api("PUT", "/burrow/v1/models/settings", { breakerFailures: 0 })).status).toBe(400);

    // A key naming a secret the caller does not have: 400 naming it, at create and at update, nothing changed.
    const missing = unique("no-such-secret");
    const noSecret = await api("POST", "/burrow/v1/models/providers", { name: unique("p"), kind: "openai", baseUrl: "http://x/v1", models: ["m"], apiKey: { secret: missing } });
    expect(noSecret.status, noSecret.text).toBe(400);
    expect(noSecret.json).toMatchObject({ code: 400, message: expect.stringContaining(missing) });
    const patchMissing = await api("PATCH", `/burrow/v1/models/providers/${name}`, { apiKey: { secret: missing } });
    expect(patchMissing.status, patchMissing.text).toBe(400);
    expect(patchMissing.json.message).toContain(missing);
    const existing = unique("present");
    const secret = await Secret.create(existing, "sk-from-secret", sdkOpts());
    try {
      const withSecret = await api("PATCH", `/burrow/v1/models/providers/${name}`, { apiKey: { secret: existing.toUpperCase() } });
      expect(withSecret.status, withSecret.text).toBe(200);
      expect(withSecret.json.apiKey).toEqual({ source: "secret", secret: existing });
    } finally {
      await Secret.destroy(secret.secretId, sdkOpts());
    }
    const after = (await api("GET", "/burrow/v1/models/providers")).json.find((p: { name: string }) => p.name === name);
    expect(after).toMatchObject({ priority: 3, apiKey: { source: "secret", secret: existing } });
  });

  test("the provider's key is injected (literal for OpenAI, a secret for Anthropic), the caller's key never forwarded nor the provider's answered", async () => {
    const a = await fake("a");
    const model = unique("gpt");
    await addProvider({ name: unique("oa"), kind: "openai", baseUrl: a.baseUrl("openai"), apiKey: "sk-literal-123", models: [model] });
    const res = await call("/v1/chat/completions", { model, messages: [] });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ provider: "a", usage: { total_tokens: 8 } });
    expect(a.received[0]!.path).toBe("/v1/chat/completions");
    expect(a.received[0]!.headers.authorization).toBe("Bearer sk-literal-123");
    expect(JSON.stringify(a.received[0]!.headers)).not.toContain(burrowEnv().apiKey);
    expect(JSON.stringify(res)).not.toContain("sk-literal-123");

    const secretName = unique("anthropic-key");
    const secret = await Secret.create(secretName, "ak-from-secret-456", sdkOpts());
    try {
      const b = await fake("b");
      const claude = unique("claude");
      await addProvider({ name: unique("an"), kind: "anthropic", baseUrl: b.baseUrl("anthropic"), apiKey: { secret: secretName }, models: [claude] });
      const r = await call("/v1/messages", { model: claude, max_tokens: 5, messages: [] }, { headers: { "anthropic-version": "2023-06-01", "anthropic-beta": "tools-1" }, key: null });
      expect(r.status).toBe(401); // no key and not a sandbox
      expect(JSON.parse(r.body)).toMatchObject({ type: "error", error: { type: "authentication_error" } });
      const ok = await call("/v1/messages", { model: claude, max_tokens: 5, messages: [] }, { headers: { "anthropic-version": "2023-06-01", "anthropic-beta": "tools-1", "x-api-key": burrowEnv().apiKey } });
      expect(ok.status).toBe(200);
      const seen = b.received[0]!;
      expect(seen.headers["x-api-key"]).toBe("ak-from-secret-456");
      expect(seen.headers["anthropic-version"]).toBe("2023-06-01");
      expect(seen.headers["anthropic-beta"]).toBe("tools-1");
      expect(seen.headers.authorization).toBeUndefined();
      expect(JSON.stringify(ok)).not.toContain("ak-from-secret-456");
      // A rotated secret applies to the next request.
      await Secret.update(secretName, "ak-rotated-789", sdkOpts());
      await call("/v1/messages", { model: claude, max_tokens: 5, messages: [] });
      expect(b.received[1]!.headers["x-api-key"]).toBe("ak-rotated-789");
    } finally {
      await Secret.destroy(secret.secretId, sdkOpts());
    }
  });

  test("fails over at connect, on 500, on 429 and on a hang, in priority order", async () => {
    const model = unique("fo");
    const down = await fake("down");
    const backup = await fake("backup");
    // Priority 0: a port nothing listens on; 1: a provider told what to do; 2: the backup.
    await addProvider({ name: unique("dead"), kind: "openai", baseUrl: "http://127.0.0.1:1/v1", models: [model], priority: 0 });
    await addProvider({ name: unique("flaky"), kind: "openai", baseUrl: down.baseUrl("openai"), models: [model], priority: 1 });
    await addProvider({ name: unique("backup"), kind: "openai", baseUrl: backup.baseUrl("openai"), models: [model], priority: 2 });
    await api("PUT", "/burrow/v1/models/settings", { attemptTimeoutMs: 500, breakerFailures: 100 });
    for (const mode of ["500", "429", "hang"] as const) {
      down.script.push(mode);
      const before = backup.received.length;
      const r = await call("/v1/chat/completions", { model, messages: [] });
      expect(r.status, mode).toBe(200);
      expect(JSON.parse(r.body).provider, mode).toBe("backup");
      expect(backup.received.length).toBe(before + 1);
    }
    expect(down.received.length).toBe(3);
    // Once the flaky provider is healthy it answers itself (the dead one is still tried first and fails).
    const r = await call("/v1/chat/completions", { model, messages: [] });
    expect(JSON.parse(r.body).provider).toBe("down");
    // Every provider failing: the last provider's answer as it came.
    down.script.push("500");
    backup.script.push("429");
    const failed = await call("/v1/chat/completions", { model, messages: [] });
    expect(failed.status).toBe(429);
    expect(JSON.parse(failed.body)).toMatchObject({ error: { message: "backup rate limited" } });
  });

  test("the circuit opens after consecutive failures, skips the provider, and closes after a successful trial", async () => {
    const model = unique("cb");
    const flaky = await fake("flaky");
    const backup = await fake("backup");
    const flakyName = unique("flaky");
    await addProvider({ name: flakyName, kind: "openai", baseUrl: flaky.baseUrl("openai"), models: [model], priority: 0 });
    await addProvider({ name: unique("backup"), kind: "openai", baseUrl: backup.baseUrl("openai"), models: [model], priority: 1 });
    await api("PUT", "/burrow/v1/models/settings", { breakerFailures: 2, breakerBackoffMs: 1500 });
    flaky.script.push("500", "500");
    await call("/v1/chat/completions", { model, messages: [] });
    await call("/v1/chat/completions", { model, messages: [] });
    const state = async () => (await api("GET", "/burrow/v1/models/providers")).json.find((p: { name: string }) => p.name === flakyName).circuit;
    expect(await state()).toBe("open");
    const r = await call("/v1/chat/completions", { model, messages: [] });
    expect(JSON.parse(r.body).provider).toBe("backup");
    expect(flaky.received.length).toBe(2); // skipped while open
    // After the back-off: half-open, one trial, which succeeds and closes the circuit.
    await expect.poll(state, { timeout: 10_000, interval: 100 }).toBe("half-open");
    const trial = await call("/v1/chat/completions", { model, messages: [] });
    expect(JSON.parse(trial.body).provider).toBe("flaky");
    expect(await state()).toBe("closed");
  });

  test("SSE streams pass through byte for byte and unbuffered (the first event arrives while the provider holds the rest)", async () => {
    const model = unique("sse");
    const p = await fake("s");
    await addProvider({ name: unique("s"), kind: "openai", baseUrl: p.baseUrl("openai"), models: [model] });
    p.script.push("sse-hold");
    const r = await call("/v1/chat/completions", { model, stream: true, stream_options: { include_usage: true } }, { onFirstChunk: () => p.release() });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("text/event-stream");
    expect(r.body).toBe(OPENAI_SSE_EVENTS.join(""));

    const claude = unique("claude");
    const q = await fake("q");
    await addProvider({ name: unique("q"), kind: "anthropic", baseUrl: q.baseUrl("anthropic"), models: [claude] });
    q.script.push("sse-hold");
    const a = await call("/v1/messages", { model: claude, stream: true }, { onFirstChunk: () => q.release() });
    expect(a.body).toBe(ANTHROPIC_SSE_EVENTS.join(""));
  });

  test("a provider breaking off mid-stream ends the stream with an error event, not silently", async () => {
    const model = unique("drop");
    const p = await fake("d");
    const other = await fake("other");
    await addProvider({ name: unique("d"), kind: "openai", baseUrl: p.baseUrl("openai"), models: [model], priority: 0 });
    await addProvider({ name: unique("o"), kind: "openai", baseUrl: other.baseUrl("openai"), models: [model], priority: 1 });
    p.script.push("drop");
    const r = await call("/v1/chat/completions", { model, stream: true });
    expect(r.body.startsWith(OPENAI_SSE_EVENTS[0]! + OPENAI_SSE_EVENTS[1]!)).toBe(true);
    const last = r.body.trimEnd().split("\n\n").pop()!;
    expect(JSON.parse(last.replace(/^data: /, ""))).toMatchObject({ error: { type: "server_error", message: expect.stringContaining("mid-stream") } });
    expect(other.received.length).toBe(0); // bytes had gone out: no failover
  });

  test("budgets: per-key requests and tokens answer 429 in the provider's shape", async () => {
    const model = unique("b");
    const claude = unique("bc");
    const p = await fake("b");
    await addProvider({ name: unique("b"), kind: "openai", baseUrl: p.baseUrl("openai"), models: [model] });
    await addProvider({ name: unique("bc"), kind: "anthropic", baseUrl: p.baseUrl("anthropic"), models: [claude] });
    await api("PUT", "/burrow/v1/models/settings", { keyBudget: { windowSec: 3600, requests: 2 } });
    expect((await call("/v1/chat/completions", { model })).status).toBe(200);
    expect((await call("/v1/messages", { model: claude })).status).toBe(200);
    const refused = await call("/v1/chat/completions", { model });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { type: "rate_limit_exceeded", message: expect.stringContaining("requests") } });
    const refusedA = await call("/v1/messages", { model: claude });
    expect(JSON.parse(refusedA.body)).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    expect(p.received.length).toBe(2);

    // Tokens: the first answer uses 8 (5 + 3) of 10, the second passes the limit, the third is refused.
    await api("PUT", "/burrow/v1/models/settings", { keyBudget: { windowSec: 3600, tokens: 10 } });
    expect((await call("/v1/chat/completions", { model })).status).toBe(200);
    expect((await call("/v1/chat/completions", { model })).status).toBe(200);
    const overTokens = await call("/v1/chat/completions", { model });
    expect(overTokens.status).toBe(429);
    expect(JSON.parse(overTokens.body).error.message).toMatch(/tokens/);
  });

  test("usage is recorded per caller and model, from JSON answers and streamed final chunks", async () => {
    const model = unique("u");
    const claude = unique("uc");
    const p = await fake("u");
    await addProvider({ name: unique("u"), kind: "openai", baseUrl: p.baseUrl("openai"), models: [model] });
    await addProvider({ name: unique("uc"), kind: "anthropic", baseUrl: p.baseUrl("anthropic"), models: [claude] });
    await call("/v1/chat/completions", { model });
    p.script.push("sse");
    await call("/v1/chat/completions", { model, stream: true });
    p.script.push("sse");
    await call("/v1/messages", { model: claude, stream: true });
    const usage = (await api("GET", "/burrow/v1/models/usage")).json as Array<{ sandboxID: string | null; model: string; requests: number; inputTokens: number; outputTokens: number }>;
    expect(usage.find((u) => u.model === model)).toEqual({ sandboxID: null, model, requests: 2, inputTokens: 5 + 11, outputTokens: 3 + 7 });
    expect(usage.find((u) => u.model === claude)).toEqual({ sandboxID: null, model: claude, requests: 1, inputTokens: 21, outputTokens: 9 });
    // usage?sandboxID= is scoped by the teams access hook (test/teams) and per sandbox in sandbox-gateway.test.ts.
    // The gateway's own model list.
    const models = await fetch(`${gatewayUrl}/v1/models`, { headers: { authorization: `Bearer ${burrowEnv().apiKey}` } }).then((r) => r.json() as Promise<{ data: Array<{ id: string }> }>);
    expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining([model, claude]));
  });
});
