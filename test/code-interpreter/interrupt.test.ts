// Runs that go wrong never block the next one: the SDK's timeoutMs (a client abort) interrupts the kernel, so does
// a client that disconnects, a server-side timeout interrupts too, and a kernel killed for memory is reported and
// started again under the same context id.
import { request } from "node:http";
import { TimeoutError } from "@e2b/code-interpreter";
import { describe, expect, it } from "vitest";
import { useInterpreter, interpreterHeaders, ndjson } from "./helpers.js";

const shared = useInterpreter();

describe("interrupting runs", () => {
  it("timeoutMs on an infinite loop, then a normal run in the same context", async () => {
    await shared.sandbox.runCode("state = 'kept'");
    await expect(shared.sandbox.runCode("while True:\n    pass", { timeoutMs: 2000 })).rejects.toBeInstanceOf(TimeoutError);
    const next = await shared.sandbox.runCode("state", { timeoutMs: 30_000 });
    expect(next.text).toBe("kept");
  });

  it("a client that disconnects (HTTP/1.1 connection closed) interrupts its run", async () => {
    const code = [
      "import time",
      "try:",
      "    print('sleeping', flush=True)",
      "    time.sleep(120)",
      "    outcome = 'slept'",
      "except KeyboardInterrupt:",
      "    outcome = 'interrupted'",
    ].join("\n");
    const url = new URL(`${shared.env.sandboxUrl}/execute`);
    // What Python's client does: HTTP/1.1, and on cancellation the connection is closed.
    await new Promise<void>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { ...interpreterHeaders(shared.sandbox), Connection: "close" } },
        (res) => {
          expect(res.statusCode).toBe(200);
          // Disconnect once the code is inside its try block: an interrupt that lands earlier (while the cell is
          // still being compiled) is a KeyboardInterrupt too, but the code could not record it.
          let seen = "";
          res.on("data", (chunk: Buffer) => {
            seen += chunk.toString();
            if (!seen.includes("sleeping")) return;
            req.destroy();
            resolve();
          });
        },
      );
      req.on("error", () => undefined);
      req.once("error", reject);
      req.end(JSON.stringify({ code }));
    });
    // This run waits for the abandoned one; it only finishes because that one was interrupted.
    const next = await shared.sandbox.runCode("outcome", { timeoutMs: 30_000 });
    expect(next.text).toBe("interrupted");
  });

  it("a server-side timeout (body field or header) interrupts the run and reports it", async () => {
    const viaBody = await fetch(`${shared.env.sandboxUrl}/execute`, {
      method: "POST",
      headers: interpreterHeaders(shared.sandbox),
      body: JSON.stringify({ code: "import time\ntime.sleep(60)", timeout_ms: 1000 }),
    });
    const items = ndjson(await viaBody.text());
    expect(items.at(-1)).toEqual({ type: "end_of_execution" });
    expect(items.filter((i) => i.type === "error")).toEqual([expect.objectContaining({ name: "TimeoutError" })]);
    const viaHeader = await fetch(`${shared.env.sandboxUrl}/execute`, {
      method: "POST",
      headers: { ...interpreterHeaders(shared.sandbox), "X-Execution-Timeout-Ms": "1000" },
      body: JSON.stringify({ code: "while (true) {}", language: "javascript" }),
    });
    expect(ndjson(await viaHeader.text()).find((i) => i.type === "error")).toMatchObject({ name: "TimeoutError" });
    expect((await shared.sandbox.runCode("40 + 2", { language: "javascript" })).text).toBe("42");
  });

  it("a kernel that exits (os._exit) is reported and restarts under the same id", async () => {
    const context = await shared.sandbox.createCodeContext();
    const died = await shared.sandbox.runCode("import os; os._exit(7)", { context });
    expect(died.error?.name).toBe("KernelDiedError");
    expect(died.error?.value).toContain("exited with code 7");
    expect((await shared.sandbox.runCode("1 + 1", { context })).text).toBe("2");
  });

  it("a kernel killed by memory exhaustion is reported and its context works again", async () => {
    const context = await shared.sandbox.createCodeContext();
    await shared.sandbox.runCode("before = 1", { context });
    const execution = await shared.sandbox.runCode("chunks = []\nwhile True:\n    chunks.append(b'x' * (64 * 1024 * 1024))", { context, timeoutMs: 120_000 });
    expect(execution.error?.name).toMatch(/OutOfMemoryError|KernelDiedError/);
    expect(execution.error?.value).toMatch(/out-of-memory killer/);
    const lost = await shared.sandbox.runCode("before", { context, timeoutMs: 60_000 });
    expect(lost.error?.name).toBe("NameError");
    expect((await shared.sandbox.runCode("1 + 1", { context })).text).toBe("2");
    expect((await shared.sandbox.listCodeContexts()).map((c) => c.id)).toContain(context.id);
  });
});
