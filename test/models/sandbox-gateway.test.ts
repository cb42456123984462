// Sandboxes call the model gateway as http://models.burrow (the host service the gateway registers), with curl from
// inside real sandboxes of the e2e server. The fake provider listens on the host's loopback, which the server reaches
// and a sandbox does not (its loopback is its own): every answer a sandbox gets came through the gateway. A sandbox
// sends no key; it is known by its address, so usage is recorded under its id and budgets are counted per sandbox.
import { randomBytes } from "node:crypto";
import { afterEach, expect } from "vitest";
import type { Sandbox } from "e2b";
import { burrowEnv, sandboxTest } from "../conformance/env.js";
import { FakeProvider, OPENAI_SSE_EVENTS } from "./fake-provider.js";

const unique = (stem: string) => `${stem}-${randomBytes(3).toString("hex")}`;

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

/** POST `body` to the gateway from inside the sandbox with curl; the status and the body as curl printed them. */
async function curl(sandbox: Sandbox, path: string, body: unknown): Promise<{ status: number; body: string; headers: string }> {
  const payload = JSON.stringify(body).replaceAll("'", "'\\''");
  const r = await sandbox.commands.run(
    `curl -sS -N -m 60 -D /tmp/headers -o /tmp/body -w '%{http_code}' -H 'content-type: application/json' --data '${payload}' http://models.burrow${path}; ` +
      `echo; cat /tmp/headers; echo '--body--'; cat /tmp/body`,
    { timeoutMs: 90_000 },
  );
  const [status, rest] = [r.stdout.slice(0, r.stdout.indexOf("\n")), r.stdout.slice(r.stdout.indexOf("\n") + 1)];
  const split = rest.indexOf("--body--\n");
  return { status: Number(status), headers: rest.slice(0, split).toLowerCase(), body: rest.slice(split + "--body--\n".length) };
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

sandboxTest("sandboxes call http://models.burrow without a key; usage is theirs, budgets are per sandbox", async ({ sandbox, spawn }) => {
  const gateway = await api("GET", "/burrow/v1/models/gateway");
  expect(gateway.json).toMatchObject({ sandboxUrl: "http://models.burrow" });

  const provider = await new FakeProvider("s").start();
  cleanups.push(() => provider.close());
  const model = unique("sbx-model");
  const name = unique("sbx");
  const added = await api("POST", "/burrow/v1/models/providers", { name, kind: "openai", baseUrl: provider.baseUrl("openai"), apiKey: "sk-only-the-gateway-knows", models: [model] });
  expect(added.status, added.text).toBe(201);
  cleanups.push(() => api("DELETE", `/burrow/v1/models/providers/${name}`));
  const budget = await api("PUT", "/burrow/v1/models/settings", { sandboxBudget: { windowSec: 3600, requests: 2 } });
  expect(budget.status, budget.text).toBe(200);
  cleanups.push(() => api("PUT", "/burrow/v1/models/settings", { sandboxBudget: null }));

  // The provider itself is out of the sandbox's reach: only the gateway can get to it.
  const direct = await sandbox.commands.run(`curl -sS -m 10 ${provider.baseUrl("openai")}/models`).catch((err: { exitCode?: number }) => err);
  expect((direct as { exitCode?: number }).exitCode).not.toBe(0);
  expect(provider.received).toHaveLength(0);

  // A JSON answer, then a streamed one passed through byte for byte; the provider sees its key, the sandbox sent none.
  const first = await curl(sandbox, "/v1/chat/completions", { model, messages: [{ role: "user", content: "it's me" }] });
  expect(first.status, first.body).toBe(200);
  expect(JSON.parse(first.body)).toMatchObject({ provider: "s", usage: { prompt_tokens: 5, completion_tokens: 3 } });
  expect(provider.received[0]!.headers.authorization).toBe("Bearer sk-only-the-gateway-knows");
  expect(JSON.parse(provider.received[0]!.body)).toMatchObject({ model, messages: [{ content: "it's me" }] });
  provider.script.push("sse");
  const streamed = await curl(sandbox, "/v1/chat/completions", { model, stream: true, messages: [] });
  expect(streamed.status).toBe(200);
  expect(streamed.headers).toContain("content-type: text/event-stream");
  expect(streamed.body).toBe(OPENAI_SSE_EVENTS.join(""));
  const env = await sandbox.commands.run("env; cat /etc/hosts");
  expect(env.stdout).not.toContain("sk-only-the-gateway-knows");

  // The sandbox's budget of 2 requests is spent: 429 in OpenAI's shape with Retry-After, the provider not asked.
  const over = await curl(sandbox, "/v1/chat/completions", { model, messages: [] });
  expect(over.status).toBe(429);
  expect(over.headers).toMatch(/retry-after: \d+/);
  expect(JSON.parse(over.body)).toMatchObject({ error: { message: expect.stringContaining("sandbox budget"), code: "rate_limit_exceeded" } });
  expect(provider.received).toHaveLength(2);

  // Another sandbox has a budget of its own, and reaches models.burrow without internet access (it is on the host).
  const other = await spawn({ allowInternetAccess: false });
  const theirs = await curl(other, "/v1/chat/completions", { model, messages: [] });
  expect(theirs.status, theirs.body).toBe(200);
  expect(provider.received).toHaveLength(3);

  // Usage under each sandbox's id: JSON usage (5/3) and the stream's final chunk (11/7) for the first.
  const usageOf = async (id: string) => (await api("GET", `/burrow/v1/models/usage?sandboxID=${id}`)).json;
  expect(await usageOf(sandbox.sandboxId)).toEqual([{ sandboxID: sandbox.sandboxId, model, requests: 2, inputTokens: 5 + 11, outputTokens: 3 + 7 }]);
  expect(await usageOf(other.sandboxId)).toEqual([{ sandboxID: other.sandboxId, model, requests: 1, inputTokens: 5, outputTokens: 3 }]);
}, 300_000);
