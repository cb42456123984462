// `burrow up` hands its flags to the server's own resolver and leaves the server's environment variables to it:
// a server setting that has no CLI flag (BURROW_DOMAIN, BURROW_API_KEY) still reaches the server, and a flag
// wins over its variable (BURROW_HOST).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { burrowDown, freePort } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";
import { BURROW_BIN, runBurrow } from "./run-burrow.js";

describe("burrow up", () => {
  const instance = newTestInstance("cli-up");
  let child: ChildProcess | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child?.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("passes flags to the server's resolver, which reads its own BURROW_* variables", async () => {
    const port = await freePort();
    const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
    child = spawn(
      process.execPath,
      [BURROW_BIN, "up", "--state-dir", instance.stateDir, "--instance", instance.instance, "--subnet", instance.subnet,
        "--port", String(port), "--host", "127.0.0.1", "--pool-size", "0"],
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, BURROW_LOG_LEVEL: "warn", BURROW_API_KEY: apiKey, BURROW_DOMAIN: "sbx.example.test", BURROW_HOST: "0.0.0.0" },
      },
    );
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      const onData = () => output.includes("export E2B_API_KEY=") && resolve();
      child?.stdout?.on("data", onData);
      child?.once("exit", (code) => reject(new Error(`burrow up exited with ${code}:\n${output}`)));
    });
    // --host beat BURROW_HOST (0.0.0.0 would be printed as localhost); the key is BURROW_API_KEY's.
    const url = `http://127.0.0.1:${port}`;
    expect(output).toContain(`Burrow is listening on ${url}`);
    expect(output).toContain(`export E2B_API_KEY=${apiKey}`);

    const res = await fetch(`${url}/sandboxes`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ templateID: "base", metadata: { suite: "cli-up" } }),
    });
    const created = (await res.json()) as { sandboxID: string; domain: string | null };
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(created.domain).toBe("sbx.example.test");

    const clientEnv = { ...process.env, E2B_API_URL: url, E2B_SANDBOX_URL: url, E2B_API_KEY: apiKey };
    const listed = await runBurrow(["sandbox", "list", "--json", "--metadata", "suite=cli-up"], { env: clientEnv });
    expect((JSON.parse(listed.stdout) as { sandboxId: string }[]).map((row) => row.sandboxId)).toEqual([created.sandboxID]);
    const killed = await runBurrow(["sandbox", "kill", created.sandboxID], { env: clientEnv });
    expect(killed.code, killed.stderr).toBe(0);
  }, 300_000);
});
