// Lifecycle: timeouts, events, sandboxes ending on their own, restart reconciliation and first-start credentials.
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type SandboxLifecycleEvent } from "../src/index.js";
import { StubOrchestrator } from "./helpers/stub-orchestrator.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

const toClose: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of toClose.splice(0).reverse()) await close();
});

async function server(opts: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const t = await startTestServer(opts);
  toClose.push(() => t.close());
  return t;
}

async function create(t: TestServer, body: object = { templateID: "base" }): Promise<string> {
  const res = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { sandboxID: string }).sandboxID;
}

function waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (predicate()) resolve();
      else if (Date.now() > deadline) reject(new Error("condition not met in time"));
      else setTimeout(tick, 20);
    };
    tick();
  });
}

describe("timeouts and events", () => {
  it("kills a sandbox at its endAt and reports created/timed_out", async () => {
    const t = await server();
    const events: SandboxLifecycleEvent[] = [];
    t.server.events.subscribe((e) => events.push(e));
    const id = await create(t, { templateID: "base", timeout: 1, metadata: { k: "v" } });
    expect(events).toMatchObject([{ type: "created", sandboxId: id, templateId: "tplbase0000000000000", metadata: { k: "v" } }]);
    await waitFor(() => !t.stub.sandboxes.has(id));
    expect((await t.api(`/sandboxes/${id}`)).status).toBe(404);
    expect(events.map((e) => e.type)).toEqual(["created", "timed_out"]);
    expect(events[1]).toMatchObject({ reason: "timeout" });
    const metrics = await t.server.registry.metrics();
    expect(metrics).toMatch(/burrow_sandbox_kills_total\{reason="timeout"\} 1/);
    expect(metrics).toMatch(/burrow_sandbox_creates_total\{result="ok"\} 1/);
    expect(metrics).toMatch(/burrow_sandboxes_running 0/);
  });

  it("setTimeout re-arms the kill", async () => {
    const t = await server();
    const id = await create(t, { templateID: "base", timeout: 600 });
    await t.api(`/sandboxes/${id}/timeout`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"timeout":0}' });
    await waitFor(() => !t.stub.sandboxes.has(id));
  });

  it("streams events as an AsyncIterable", async () => {
    const t = await server();
    const ac = new AbortController();
    const seen: string[] = [];
    const consumer = (async () => {
      for await (const e of t.server.events.stream({ signal: ac.signal })) {
        seen.push(`${e.type}:${e.sandboxId}`);
        if (seen.length === 2) ac.abort();
      }
    })();
    const id = await create(t);
    await t.api(`/sandboxes/${id}`, { method: "DELETE" });
    await consumer;
    expect(seen).toEqual([`created:${id}`, `killed:${id}`]);
  });

  it("a sandbox that dies on its own disappears from the store and the gateway", async () => {
    const t = await server();
    const events: SandboxLifecycleEvent[] = [];
    t.server.events.subscribe((e) => events.push(e));
    const id = await create(t);
    await t.stub.crash(id);
    expect((await t.api(`/sandboxes/${id}`)).status).toBe(404);
    expect(events.at(-1)).toMatchObject({ type: "killed", sandboxId: id, reason: "crashed" });
    expect(t.server.sandboxes.list()).toEqual([]);
  });

  it("a DELETE emits exactly one killed event although the orchestrator also reports the exit", async () => {
    const t = await server();
    const events: SandboxLifecycleEvent[] = [];
    t.server.events.subscribe((e) => events.push(e));
    const id = await create(t);
    expect((await t.api(`/sandboxes/${id}`, { method: "DELETE" })).status).toBe(204);
    expect(events.filter((e) => e.type === "killed")).toHaveLength(1);
  });
});

describe("restart", () => {
  it("keeps live sandboxes, forgets dead ones, kills unknown ones, re-arms timers", async () => {
    const t = await server();
    const survivor = await create(t, { templateID: "base", timeout: 2 });
    const lost = await create(t);
    const before = (await (await t.api(`/sandboxes/${survivor}`)).json()) as { envdAccessToken: string; endAt: string };
    await t.server.close();
    // While the server is down: one sandbox dies, another appears that nobody recorded.
    await t.stub.crash(lost);
    const orphan = await t.stub.adoptOrphan();
    await t.restart();

    const after = (await (await t.api(`/sandboxes/${survivor}`)).json()) as { envdAccessToken: string; endAt: string };
    expect(after).toMatchObject({ envdAccessToken: before.envdAccessToken, endAt: before.endAt });
    expect((await t.api(`/sandboxes/${lost}`)).status).toBe(404);
    expect(t.stub.sandboxes.has(orphan)).toBe(false);
    expect(t.stub.killCalls).toContain(orphan);
    // The gateway still reaches the survivor, and its timer fires after the restart.
    const health = await fetch(`${t.url}/health`, { headers: { "E2b-Sandbox-Id": survivor } });
    expect(health.status).toBe(204);
    await waitFor(() => !t.stub.sandboxes.has(survivor));
  });
});

describe("credentials", () => {
  it("generates e2b_<40 hex> on first start, writes it 0600, and reuses the store afterwards", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "burrow-key-"));
    const stub = new StubOrchestrator();
    const deps = { orchestrator: stub, logger: pino({ level: "silent" }), registry: new Registry() };
    try {
      const first = await startServer({ host: "127.0.0.1", port: 0, stateDir }, deps);
      const keyFile = join(stateDir, "api-key");
      const key = readFileSync(keyFile, "utf8").trim();
      expect(key).toMatch(/^e2b_[0-9a-f]{40}$/);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(first.apiKey).toEqual({ created: key, keyFile });
      // Only the hash is stored.
      expect(readFileSync(join(stateDir, "burrow.db")).includes(Buffer.from(key))).toBe(false);
      expect((await fetch(`${first.url}/v2/sandboxes`, { headers: { "X-API-KEY": key } })).status).toBe(200);
      await first.close();

      const second = await startServer({ host: "127.0.0.1", port: 0, stateDir }, { ...deps, registry: new Registry() });
      expect(second.apiKey.created).toBeNull();
      expect(readFileSync(keyFile, "utf8").trim()).toBe(key);
      expect((await fetch(`${second.url}/v2/sandboxes`, { headers: { "X-API-KEY": key } })).status).toBe(200);
      await second.close();
    } finally {
      await stub.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it("registers BURROW_API_KEY instead of generating one", async () => {
    const t = await server();
    expect(() => statSync(join(t.stateDir, "api-key"))).toThrow();
    expect((await fetch(`${t.url}/v2/sandboxes`, { headers: { "X-API-KEY": t.apiKey } })).status).toBe(200);
  });

  it("close() via AbortSignal", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "burrow-sig-"));
    const stub = new StubOrchestrator();
    const ac = new AbortController();
    const s = await startServer(
      { host: "127.0.0.1", port: 0, stateDir, apiKey: "k" },
      { orchestrator: stub, logger: pino({ level: "silent" }), registry: new Registry(), signal: ac.signal },
    );
    ac.abort();
    await s.close();
    await expect(fetch(`${s.url}/health`)).rejects.toThrow();
    await stub.close();
    rmSync(stateDir, { recursive: true, force: true });
  });
});
