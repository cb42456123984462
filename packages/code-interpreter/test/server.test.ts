// The execution server on the host, driven by the official @e2b/code-interpreter SDK (debug mode, pointed at the
// server with sandboxUrl) and by raw requests where the protocol itself is checked.
import { NotFoundError, Sandbox } from "@e2b/code-interpreter";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startInterpreter, type HostInterpreter } from "./helpers.js";

let host: HostInterpreter;
let sandbox: Sandbox;

function lines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(async () => {
  host = await startInterpreter({ maxOutputChars: 64 * 1024 });
  await host.envd.init({ envVars: { SANDBOX_VAR: "from envd" } });
  sandbox = await Sandbox.create({ debug: true, sandboxUrl: host.url });
});

afterAll(async () => {
  await host?.close();
});

describe("execution server (host)", () => {
  it("answers /health and streams the protocol's items in order", async () => {
    expect(await (await fetch(`${host.url}/health`)).json()).toBe("OK");
    const res = await fetch(`${host.url}/execute`, { method: "POST", body: JSON.stringify({ code: "console.log('a'); 'b'", language: "js" }) });
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const text = await res.text();
    const items = lines(text);
    expect(items.map((i) => i.type)).toEqual(["number_of_executions", "stdout", "result", "end_of_execution"]);
    expect(items[2]).toEqual({ type: "result", text: "b", extra: {}, is_main_result: true });
    expect(text.endsWith('{"type": "end_of_execution"}\n')).toBe(true);
  });

  it("runs javascript and bash with the sandbox's variables through the SDK", async () => {
    const js = await sandbox.runCode("process.env.SANDBOX_VAR", { language: "javascript" });
    expect(js.text).toBe("from envd");
    const bash = await sandbox.runCode('echo "$SANDBOX_VAR"', { language: "bash" });
    expect(bash.logs.stdout).toEqual(["from envd\n"]);
  });

  it("answers 404 for an unknown context, 400 for context and language together, 422 for a malformed body", async () => {
    await expect(sandbox.runCode("1", { context: { id: "nope", language: "javascript", cwd: "/" } })).rejects.toBeInstanceOf(NotFoundError);
    const both = await fetch(`${host.url}/execute`, { method: "POST", body: JSON.stringify({ code: "1", context_id: "x", language: "js" }) });
    expect(both.status).toBe(400);
    const missing = await fetch(`${host.url}/execute`, { method: "POST", body: JSON.stringify({ language: "js" }) });
    expect(missing.status).toBe(422);
    expect(await missing.json()).toMatchObject({ detail: [{ loc: ["body", "code"] }] });
    expect((await fetch(`${host.url}/execute`, { method: "POST", body: "{not json" })).status).toBe(422);
    expect((await fetch(`${host.url}/contexts/nope`, { method: "DELETE" })).status).toBe(404);
  });

  it("runs one context's runs in order", async () => {
    const context = await sandbox.createCodeContext({ language: "javascript" });
    await sandbox.runCode("globalThis.order = []", { context });
    // Each request is queued once its response head arrives, so the next is sent only then: arrival order is known.
    const responses: Response[] = [];
    for (const n of [3, 2, 1]) {
      const code = `await new Promise((r) => setTimeout(r, ${n * 100})); order.push(${n})`;
      responses.push(await fetch(`${host.url}/execute`, { method: "POST", body: JSON.stringify({ code, context_id: context.id }) }));
    }
    await Promise.all(responses.map((r) => r.text()));
    expect((await sandbox.runCode("order.join(',')", { context })).text).toBe("3,2,1");
    await sandbox.removeCodeContext(context);
  });

  it("writes a keepalive line during silence", { timeout: 30_000 }, async () => {
    const res = await fetch(`${host.url}/execute`, {
      method: "POST",
      body: JSON.stringify({ code: "await new Promise((r) => setTimeout(r, 7500)); 'late'", language: "js" }),
    });
    const items = lines(await res.text());
    // A keepalive goes out once 5 s have passed without a line, checked every second: between 5 and 6 s into a
    // silence (a 6 s silence made it a race with the result), so a 7.5 s one has one, or two on a starved host.
    const types = items.map((i) => i.type);
    expect(types.filter((t) => t !== "keepalive")).toEqual(["number_of_executions", "result", "end_of_execution"]);
    expect(types.slice(1, types.indexOf("result"))).toContain("keepalive");
    expect(types.slice(1, types.indexOf("result")).every((t) => t === "keepalive")).toBe(true);
  });

  it("cuts output over the limit with a marker", async () => {
    const execution = await sandbox.runCode("for (let i = 0; i < 1000; i++) console.log('y'.repeat(1000)); 'end'", { language: "js" });
    const out = execution.logs.stdout.join("");
    expect(out).toContain("[burrow: output truncated");
    expect(out.length).toBeLessThan(70 * 1024);
    expect(execution.text).toBe("end");
  });

  it("interrupts the run of a client that goes away, so the next run does not wait", { timeout: 30_000 }, async () => {
    const context = await sandbox.createCodeContext({ language: "javascript" });
    const abort = new AbortController();
    const res = await fetch(`${host.url}/execute`, {
      method: "POST",
      body: JSON.stringify({ code: "await new Promise((r) => setTimeout(r, 600000))", context_id: context.id }),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    // Queued behind the abandoned run: it can only answer because that run was interrupted.
    expect((await sandbox.runCode("1 + 1", { context, timeoutMs: 20_000 })).text).toBe("2");
  });

  it("replaces a kernel that ignores the interrupt, under the same context id", { timeout: 30_000 }, async () => {
    const context = await sandbox.createCodeContext({ language: "javascript" });
    await sandbox.runCode("globalThis.kept = 1", { context });
    // After an await the loop runs outside the interruptible script: SIGINT cannot stop it, the grace period ends.
    const res = await fetch(`${host.url}/execute`, {
      method: "POST",
      body: JSON.stringify({ code: "await null; while (true) {}", context_id: context.id, timeout_ms: 500 }),
    });
    const error = lines(await res.text()).find((i) => i.type === "error");
    expect(error).toMatchObject({ name: "TimeoutError" });
    expect(String(error?.value)).toContain("restarted");
    expect((await sandbox.runCode("typeof kept", { context })).text).toBe("undefined");
    expect((await sandbox.listCodeContexts()).map((c) => c.id)).toContain(context.id);
  });

  it("reports a kernel that exits and starts it again under the same id", async () => {
    const context = await sandbox.createCodeContext({ language: "javascript" });
    const died = await sandbox.runCode("process.exit(3)", { context });
    expect(died.error?.name).toBe("KernelDiedError");
    expect(died.error?.value).toContain("exited with code 3");
    expect((await sandbox.runCode("'alive'", { context })).text).toBe("alive");
  });
});

describe("access token", () => {
  let secured: HostInterpreter;

  beforeAll(async () => {
    secured = await startInterpreter({ defaultContexts: [] });
    await secured.envd.init({ accessToken: "s3cret" });
  });

  afterAll(async () => {
    await secured?.close();
  });

  it("is required on /execute and checked wherever it is sent", async () => {
    const execute = (headers: Record<string, string>) =>
      fetch(`${secured.url}/execute`, { method: "POST", headers, body: JSON.stringify({ code: "1", language: "bash" }) });
    expect((await execute({})).status).toBe(401);
    expect((await execute({ "X-Access-Token": "wrong" })).status).toBe(401);
    expect((await execute({ "X-Access-Token": "s3cret" })).status).toBe(200);
    expect((await fetch(`${secured.url}/contexts`, { headers: { "X-Access-Token": "wrong" } })).status).toBe(401);
    // The official JS SDK sends no token on context calls: those pass without one.
    expect((await fetch(`${secured.url}/contexts`)).status).toBe(200);
    expect((await fetch(`${secured.url}/health`)).status).toBe(200);
  });
});
