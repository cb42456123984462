// `burrow up` hands its flags to the orchestrator's and the server's own resolvers and leaves the environment's
// variables to them: settings given only as variables (BURROW_STATE_DIR, BURROW_INSTANCE, BURROW_SUBNET,
// BURROW_POOL_SIZE, BURROW_DOMAIN, BURROW_API_KEY) reach them, and a flag wins over its variable (BURROW_HOST).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
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

  it("passes flags to the orchestrator's and the server's resolvers, which read their own BURROW_* variables", async () => {
    const port = await freePort();
    const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
    child = spawn(
      process.execPath,
      [BURROW_BIN, "up", "--port", String(port), "--host", "127.0.0.1"],
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          ...process.env,
          BURROW_LOG_LEVEL: "warn",
          BURROW_STATE_DIR: instance.stateDir,
          BURROW_INSTANCE: instance.instance,
          BURROW_SUBNET: instance.subnet,
          BURROW_POOL_SIZE: "0",
          BURROW_PUBLIC_REGISTRIES: "false",
          BURROW_API_KEY: apiKey,
          BURROW_DOMAIN: "sbx.example.test",
          BURROW_HOST: "0.0.0.0",
        },
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
    // The orchestrator took its state directory from BURROW_STATE_DIR, and BURROW_POOL_SIZE=0 kept no pool there.
    expect(readdirSync(join(instance.stateDir, "sandboxes"))).toEqual([created.sandboxID]);
    expect(existsSync(join(instance.stateDir, "burrow.db"))).toBe(true);

    const clientEnv = { ...process.env, E2B_API_URL: url, E2B_SANDBOX_URL: url, E2B_API_KEY: apiKey };
    const listed = await runBurrow(["sandbox", "list", "--json", "--metadata", "suite=cli-up"], { env: clientEnv });
    expect((JSON.parse(listed.stdout) as { sandboxId: string }[]).map((row) => row.sandboxId)).toEqual([created.sandboxID]);
    const killed = await runBurrow(["sandbox", "kill", created.sandboxID], { env: clientEnv });
    expect(killed.code, killed.stderr).toBe(0);
  }, 300_000);
});
