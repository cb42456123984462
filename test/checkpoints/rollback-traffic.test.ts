// Traffic during a rollback: the sandbox is halted, its files swapped and booted again (1–3 s) while it stays the
// same running sandbox, so requests routed to it meanwhile wait for it and are then served — never a 502 (which
// the official SDK reports as "sandbox not running"). Checked with the official e2b SDK against the real server
// of the global setup: commands.run and files.read calls issued all along while the sandbox is down (from its old
// init gone until the rollback is answered) succeed and see the rolled-back files.
import { afterAll, describe, expect, inject, it } from "vitest";
import { Sandbox as E2bSandbox } from "e2b";
import { Sandbox } from "@burrow/sdk";
import { processExists, sandboxInternals } from "../helpers/sandbox-internals.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl, debug: false };
const started: string[] = [];
const FILE = "/home/user/state.txt";

afterAll(async () => {
  await Promise.allSettled(started.map((id) => E2bSandbox.kill(id, opts)));
});

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("requests during a rollback", () => {
  it("a commands.run and a files.read issued while the sandbox is rolled back wait for it and see the checkpoint's files", async () => {
    const burrowSandbox = await Sandbox.create("base", opts);
    started.push(burrowSandbox.sandboxId);
    const sandbox = await E2bSandbox.connect(burrowSandbox.sandboxId, opts);
    await sandbox.files.write(FILE, "checkpointed");
    const checkpoint = await burrowSandbox.checkpoint();
    await sandbox.files.write(FILE, "changed after");
    const { pid } = sandboxInternals(env.stateDir, sandbox.sandboxId);

    let rolledBack = false;
    const rollback = burrowSandbox.rollback(checkpoint.checkpointId).then(() => (rolledBack = true));
    // The rollback has halted the sandbox: its init is gone, and it is not back yet.
    await until(() => !processExists(pid) || rolledBack, "the sandbox's init ended");
    expect(rolledBack).toBe(false);
    // Requests at every stage of the rollback: halted, files swapped, booting, envd starting.
    const calls: Promise<string>[] = [];
    while (!rolledBack) {
      calls.push(sandbox.commands.run(`cat ${FILE}`, { requestTimeoutMs: 60_000 }).then((run) => `${run.exitCode} ${run.stdout}`));
      calls.push(sandbox.files.read(FILE, { requestTimeoutMs: 60_000 }));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await rollback;
    expect(calls.length).toBeGreaterThan(2);
    const answers = (await Promise.allSettled(calls)).map((r) => (r.status === "fulfilled" ? r.value : String(r.reason)));
    expect(answers).toEqual(calls.map((_, i) => (i % 2 === 0 ? "0 checkpointed" : "checkpointed")));
    expect(sandboxInternals(env.stateDir, sandbox.sandboxId).pid).not.toBe(pid);
    expect(await sandbox.isRunning()).toBe(true);
  }, 120_000);
});
