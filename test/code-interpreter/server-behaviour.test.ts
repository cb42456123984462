// The execution server's own guarantees: contexts run in parallel, huge output is cut instead of stalling the
// stream, every endpoint checks the sandbox's access token, and `49999-<id>` hosts reach it through the gateway.
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { accessToken, useInterpreter, interpreterHeaders } from "./helpers.js";

const shared = useInterpreter();

describe("execution server", () => {
  it("runs 8 contexts in parallel", { timeout: 180_000 }, async () => {
    const contexts = await Promise.all(Array.from({ length: 8 }, () => shared.sandbox.createCodeContext()));
    const runs = await Promise.all(
      contexts.map((context) => shared.sandbox.runCode("import time\nstart = time.time()\ntime.sleep(3)\n(start, time.time())", { context, timeoutMs: 120_000 })),
    );
    const spans = runs.map((run) => JSON.parse(run.text!.replace("(", "[").replace(")", "]")) as [number, number]);
    // Every run was sleeping at one and the same moment: none waited for another.
    expect(Math.max(...spans.map(([start]) => start))).toBeLessThan(Math.min(...spans.map(([, end]) => end)));
    await Promise.all(contexts.map((context) => shared.sandbox.removeCodeContext(context)));
  });

  it("cuts a 50 MB output with a marker instead of stalling the stream", { timeout: 120_000 }, async () => {
    const execution = await shared.sandbox.runCode("import sys\nfor _ in range(50):\n    sys.stdout.write('x' * (1024 * 1024) + '\\n')\n'done'", { timeoutMs: 90_000 });
    expect(execution.text).toBe("done");
    const stdout = execution.logs.stdout.join("");
    expect(stdout).toContain("[burrow: output truncated");
    expect(stdout.length).toBeLessThan(20 * 1024 * 1024);
    expect(stdout.length).toBeGreaterThan(10 * 1024 * 1024);
    expect((await shared.sandbox.runCode("1 + 1")).text).toBe("2");
  });

  it("checks the sandbox's access token", async () => {
    const url = `${shared.env.sandboxUrl}/execute`;
    const body = JSON.stringify({ code: "1" });
    expect(accessToken(shared.sandbox)).toBeTruthy();
    expect((await fetch(url, { method: "POST", headers: interpreterHeaders(shared.sandbox, null), body })).status).toBe(401);
    expect((await fetch(url, { method: "POST", headers: interpreterHeaders(shared.sandbox, "wrong"), body })).status).toBe(401);
    expect((await fetch(url, { method: "POST", headers: interpreterHeaders(shared.sandbox), body })).status).toBe(200);
    const contexts = `${shared.env.sandboxUrl}/contexts`;
    expect((await fetch(contexts, { headers: interpreterHeaders(shared.sandbox, "wrong") })).status).toBe(401);
    expect((await fetch(contexts, { headers: interpreterHeaders(shared.sandbox) })).status).toBe(200);
    // The official JS SDK sends no token with its context calls, so those pass without one.
    expect((await fetch(contexts, { headers: interpreterHeaders(shared.sandbox, null) })).status).toBe(200);
    expect((await fetch(contexts, { method: "POST", headers: interpreterHeaders(shared.sandbox, "wrong"), body: "{}" })).status).toBe(401);
  });

  it("answers on a 49999-<id> host through the gateway", async () => {
    const url = new URL(shared.env.sandboxUrl);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: "/health", headers: { Host: `49999-${shared.sandbox.sandboxId}.localhost` } },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.once("error", reject);
      req.end();
    });
    expect(answer).toEqual({ status: 200, body: '"OK"' });
  });
});
