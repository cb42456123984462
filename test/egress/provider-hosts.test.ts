// Real provider host names routed to the model gateway, with a Burrow server of this file's own: with the gateway
// setting providerHosts, Burrow's resolver gives sandboxes the gateway for api.openai.com and api.anthropic.com and
// the gateway terminates their TLS with the instance's egress CA, so a client inside the sandbox that calls the real
// URLs (curl with the system store, node's fetch with NODE_EXTRA_CA_CERTS, a dummy key as SDKs need one) gets
// failover, budgets and the provider key the gateway injects. The providers are fake ones on the host's loopback.
// The real hosts are never resolved nor reached: the server's resolver forwards only to the fake internet's DNS
// server (which knows .test names alone), and the test checks that it was never asked for a provider name.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { newTestInstance } from "../helpers/test-instance.js";
import { ANTHROPIC_SSE_EVENTS, FakeProvider } from "../models/fake-provider.js";

const PROVIDER_HOSTS = ["api.openai.com", "api.anthropic.com"];
const NODE = "/.burrow/lib/ld.so --library-path /.burrow/lib /.burrow/bin/node";
const KEY = `sk-gateway-only-${randomBytes(4).toString("hex")}`;

const instance = newTestInstance("xprov");
let internet: FakeInternet;
let server: ServerProcess;
const providers: FakeProvider[] = [];
const created: Sandbox[] = [];

const opts = () => sdkOptions(server.url, server.url, server.apiKey);

const api = (method: string, path: string, body?: unknown) => keyedApi(server.url, server.apiKey)(method, path, body);

async function sh(sandbox: Sandbox, command: string): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`${command} 2>&1 || true`, { timeoutMs: 90_000 });
  return r.stdout.trim();
}

/** POST `body` to `url` from the sandbox with curl (the sandbox's system store only): status line, then the body. */
async function curl(sandbox: Sandbox, url: string, body: unknown, headers: string): Promise<{ status: number; body: string }> {
  const payload = JSON.stringify(body).replaceAll("'", "'\\''");
  const out = await sh(sandbox, `curl -sS -N -m 60 -w '\\n%{http_code}' -H 'content-type: application/json' ${headers} --data '${payload}' ${url}`);
  const cut = out.lastIndexOf("\n");
  return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
}

describe("provider host names routed to the model gateway (own server, fake providers)", () => {
  beforeAll(async () => {
    // Its DNS server is the only upstream of the server's resolver; it knows nothing but this .test name.
    internet = await startFakeInternet(["203.0.113.10"], { names: { "nothing.test": "203.0.113.10" } });
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], { BURROW_DNS_UPSTREAM: DNS_ADDRESS });
    const [a, b, c] = await Promise.all([new FakeProvider("first").start(), new FakeProvider("second").start(), new FakeProvider("claude").start()]);
    providers.push(a!, b!, c!);
    for (const [name, kind, provider, priority] of [
      ["first", "openai", a!, 1],
      ["second", "openai", b!, 2],
      ["claude", "anthropic", c!, 1],
    ] as const) {
      const r = await api("POST", "/burrow/v1/models/providers", { name, kind, baseUrl: provider.baseUrl(kind), apiKey: `${KEY}-${name}`, models: [kind === "openai" ? "gpt-test" : "claude-test"], priority });
      expect(r.status, JSON.stringify(r.json)).toBe(201);
    }
  });

  afterAll(async () => {
    await tearDownServers([{ instance, server }], {
      before: [() => Promise.all(created.map((s) => s.kill().catch(() => undefined)))],
      after: [() => Promise.all(providers.map((p) => p.close())), () => internet?.close()],
    });
  });

  it("unmodified clients calling https://api.openai.com and https://api.anthropic.com reach the gateway: failover, injected keys, usage, budgets", async () => {
    const set = await api("PUT", "/burrow/v1/models/settings", { providerHosts: PROVIDER_HOSTS, sandboxBudget: { windowSec: 3600, requests: 3 } });
    expect(set.status, JSON.stringify(set.json)).toBe(200);
    expect(set.json.providerHosts).toEqual(PROVIDER_HOSTS);
    const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000 });
    created.push(sandbox);

    // OpenAI's URL, a key of the sandbox's own (ignored): the first provider fails with 500, the second answers.
    providers[0]!.script.push("500");
    const chat = await curl(sandbox, "https://api.openai.com/v1/chat/completions", { model: "gpt-test", messages: [{ role: "user", content: "hi" }] }, "-H 'Authorization: Bearer sk-sandbox-dummy'");
    expect(chat.status, chat.body).toBe(200);
    expect(JSON.parse(chat.body)).toMatchObject({ provider: "second" });
    expect(providers[0]!.received).toHaveLength(1);
    expect(providers[1]!.received[0]!.headers.authorization).toBe(`Bearer ${KEY}-second`);

    // Anthropic's URL with its SDK's headers, streamed through unchanged.
    providers[2]!.script.push("sse");
    const streamed = await curl(sandbox, "https://api.anthropic.com/v1/messages", { model: "claude-test", stream: true, max_tokens: 10, messages: [] }, "-H 'x-api-key: sk-ant-dummy' -H 'anthropic-version: 2023-06-01'");
    expect(streamed.status, streamed.body).toBe(200);
    expect(streamed.body).toBe(ANTHROPIC_SSE_EVENTS.join(""));
    expect(providers[2]!.received[0]!.headers["x-api-key"]).toBe(`${KEY}-claude`);

    // Node's fetch (NODE_EXTRA_CA_CERTS), as the vendors' JS SDKs do it; the certificate is the egress CA's.
    const fromNode = await sh(
      sandbox,
      `${NODE} -e 'fetch("https://api.openai.com/v1/chat/completions",{method:"POST",headers:{"content-type":"application/json",authorization:"Bearer dummy"},body:JSON.stringify({model:"gpt-test",messages:[]})}).then(r=>r.text()).then(console.log,e=>console.log("failed",e.cause??e))'`,
    );
    expect(JSON.parse(fromNode)).toMatchObject({ object: "chat.completion" });
    expect(await sh(sandbox, "curl -sv -m 10 -o /dev/null https://api.openai.com/ 2>&1 | grep -i 'issuer:'")).toMatch(/Burrow egress CA/);

    // The sandbox's budget (3 requests) is spent: 429 in OpenAI's shape; usage is recorded under the sandbox.
    const over = await curl(sandbox, "https://api.openai.com/v1/chat/completions", { model: "gpt-test", messages: [] }, "");
    expect(over.status, over.body).toBe(429);
    const usage = await api("GET", `/burrow/v1/models/usage?sandboxID=${sandbox.sandboxId}`);
    expect(usage.json).toEqual(expect.arrayContaining([expect.objectContaining({ sandboxID: sandbox.sandboxId, model: "gpt-test", requests: 2 })]));

    // No key anywhere inside; the names never went to any DNS server beyond Burrow's resolver.
    expect(await sh(sandbox, "env; cat /etc/hosts")).not.toContain(KEY);
    expect(internet.dnsQueries().filter((q) => q.includes("openai") || q.includes("anthropic"))).toEqual([]);
  });

  it("a name taken out of providerHosts is no longer answered with the gateway; bad entries are a 400 naming them", async () => {
    const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000 });
    created.push(sandbox);
    expect((await api("PUT", "/burrow/v1/models/settings", { providerHosts: ["api.openai.com"], sandboxBudget: null })).status).toBe(200);
    const gatewayIp = (await sh(sandbox, "getent hosts api.openai.com")).split(/\s+/)[0];
    expect(gatewayIp).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // Taken out: Burrow's resolver forwards the name (to the fake DNS server only, which knows no such name).
    expect(await sh(sandbox, "getent hosts api.anthropic.com; echo rc=$?")).toBe("rc=2");
    for (const bad of ["*.openai.com", "API.openai.com", "api.openai.com:443", "10.0.0.1"]) {
      const r = await api("PUT", "/burrow/v1/models/settings", { providerHosts: [bad] });
      expect(r, bad).toMatchObject({ status: 400, json: { message: expect.stringContaining(`'${bad}'`) } });
    }
    expect((await api("GET", "/burrow/v1/models/settings")).json.providerHosts).toEqual(["api.openai.com"]);
  });
});
