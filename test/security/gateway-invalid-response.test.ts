// A sandbox cannot crash the server by answering the gateway with broken HTTP (bad status lines, control
// characters in the reason phrase, malformed heads), not even by replacing envd on 49983 so that its owner's next
// ordinary SDK call meets the broken answer. The server runs in its own process here, so that a crash shows as
// an exit instead of being caught by the test runner.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { base64url, rawPath, startResponder, viaGateway, waitForPort } from "../helpers/raw-http-responder.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const BAD_PORT = 8000;
const NORMAL_PORT = 8081;
const ENVD_PORT = 49983;

describe("a sandbox answering the gateway with invalid HTTP", () => {
  const instance = newTestInstance("gwbad");
  let server: ServerProcess;
  let opts: { apiKey: string; apiUrl: string; sandboxUrl: string; debug: false };
  let sandbox: Sandbox;

  beforeAll(async () => {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"]);
    opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false };
    sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 600_000 });
    await startResponder(sandbox, BAD_PORT);
    await sandbox.files.write("/home/user/www/index.html", "hello from sandbox");
    // Detached from envd, with its output in a file: it must outlive envd when the last test replaces it.
    await sandbox.commands.run(`cd /home/user/www && setsid nohup python3 -m http.server ${NORMAL_PORT} > /tmp/www.log 2>&1 < /dev/null &`);
    await waitForPort(server.url, sandbox.sandboxId, BAD_PORT);
    await waitForPort(server.url, sandbox.sandboxId, NORMAL_PORT);
  });

  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  /** The server process is alive, its API answers, and the gateway still proxies a well-behaved port. */
  async function serverStillWorks(): Promise<void> {
    expect(server.child.exitCode, server.output()).toBeNull();
    expect(server.child.signalCode).toBeNull();
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const normal = await viaGateway(server.url, sandbox.sandboxId, NORMAL_PORT, "/index.html");
    expect([normal.status, normal.body]).toEqual([200, "hello from sandbox"]);
  }

  function expectInvalidResponse502(answer: { status: number; body: string }, port: number): void {
    expect(answer.status).toBe(502);
    const body = JSON.parse(answer.body) as { code: number; message: string };
    expect(body).toMatchObject({ code: 502, sandboxId: sandbox.sandboxId, port });
    expect(body.message).toBe(`The sandbox ${sandbox.sandboxId} answered on port ${port} with an invalid HTTP response`);
  }

  it.each([
    ["HTTP/1.1 042 X", "HTTP/1.1 042 X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"],
    ["HTTP/1.1 000", "HTTP/1.1 000 \r\ncontent-length: 0\r\nconnection: close\r\n\r\n"],
    ["HTTP/1.1 999 Nope", "HTTP/1.1 999 Nope\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"],
    ["a header value with a control character", "HTTP/1.1 200 OK\r\nx-evil: a\x01b\r\nconnection: close\r\n\r\n"],
    ["no HTTP at all", "SSH-2.0-OpenSSH_9.2\r\n\r\n"],
  ])("answers %s with a 502 naming the sandbox, and keeps running", async (_name, bytes) => {
    expectInvalidResponse502(await viaGateway(server.url, sandbox.sandboxId, BAD_PORT, rawPath(bytes)), BAD_PORT);
    await serverStillWorks();
  });

  it("repairs a reason phrase holding control characters instead of failing", async () => {
    const answer = await viaGateway(
      server.url,
      sandbox.sandboxId,
      BAD_PORT,
      rawPath("HTTP/1.1 200 O\x01K\x1b[2J\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"),
    );
    expect([answer.status, answer.statusMessage, answer.body]).toEqual([200, "OK", "ok"]);
    await serverStillWorks();
  });

  it("logs a warning with the cause", () => {
    const warnings = server
      .output()
      .split("\n")
      .filter((line) => line.includes("sandbox answered with an invalid HTTP response") && line.includes(sandbox.sandboxId));
    expect(warnings.some((line) => line.includes("status 42 is not a valid final status"))).toBe(true);
  });

  it("survives envd replaced by sandbox root: the owner's next SDK call fails, the server stays up", async () => {
    const badStatus = "HTTP/1.1 042 X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    await startResponder(sandbox, ENVD_PORT, ["--replace-envd", "--default", base64url(badStatus)]);
    // envd is killed a second after the command returns; the responder then holds the port against its restarts.
    // Between the two the port is closed, which is a 502 too ("port is not open"): wait for the responder's answer.
    const fromResponder = (a: { status: number; body: string }) => a.status === 502 && a.body.includes("invalid HTTP response");
    let answer = await viaGateway(server.url, sandbox.sandboxId, ENVD_PORT, "/health");
    for (let i = 0; i < 100 && !fromResponder(answer); i++) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await viaGateway(server.url, sandbox.sandboxId, ENVD_PORT, "/health");
    }
    expectInvalidResponse502(answer, ENVD_PORT);

    // Ordinary SDK calls now go to the responder through the gateway, and fail without harming the server.
    await expect(sandbox.commands.run("echo hello")).rejects.toThrow();
    await expect(sandbox.files.read("/etc/hostname")).rejects.toThrow();
    await serverStillWorks();

    // Other sandboxes are served as before.
    const other = await Sandbox.create("base", opts);
    try {
      expect((await other.commands.run("echo fine")).stdout).toBe("fine\n");
    } finally {
      await other.kill();
    }
    expect(server.child.exitCode).toBeNull();
  });
});
