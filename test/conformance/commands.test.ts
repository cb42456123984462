// Processes through envd via the gateway (SDK tests sandbox/commands/*).
import { describe, expect } from "vitest";
import { CommandExitError, Sandbox, TimeoutError } from "e2b";
import { sandboxTest, sdkOpts } from "./env.js";

describe("commands", () => {
  sandboxTest("run returns stdout, stderr and exit code", async ({ sandbox }) => {
    const result = await sandbox.commands.run("echo out; echo err >&2");
    expect(result).toMatchObject({ exitCode: 0, stdout: "out\n", stderr: "err\n" });
  });

  sandboxTest("non-zero exit throws CommandExitError", async ({ sandbox }) => {
    const err = await sandbox.commands.run("exit 3").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect((err as CommandExitError).exitCode).toBe(3);
  });

  sandboxTest("default user, home and cwd; envs and cwd options", async ({ sandbox }) => {
    expect((await sandbox.commands.run("whoami")).stdout.trim()).toBe("user");
    expect((await sandbox.commands.run("pwd")).stdout.trim()).toBe("/home/user");
    expect((await sandbox.commands.run("pwd", { cwd: "/tmp" })).stdout.trim()).toBe("/tmp");
    expect((await sandbox.commands.run("echo $FOO", { envs: { FOO: "bar" } })).stdout.trim()).toBe("bar");
    expect((await sandbox.commands.run("whoami", { user: "root" })).stdout.trim()).toBe("root");
  });

  sandboxTest("sandbox-wide envs from create", async ({ spawn }) => {
    const sbx = await spawn({ envs: { SANDBOX_VAR: "yes" } });
    try {
      expect((await sbx.commands.run("echo $SANDBOX_VAR")).stdout.trim()).toBe("yes");
    } finally {
      await sbx.kill();
    }
  });

  sandboxTest("streams output through callbacks as it is produced", async ({ sandbox }) => {
    const chunks: string[] = [];
    await sandbox.commands.run("for i in 1 2 3; do echo $i; sleep 0.2; done", { onStdout: (d) => void chunks.push(d) });
    expect(chunks.join("")).toBe("1\n2\n3\n");
    expect(chunks.length).toBeGreaterThan(1);
  });

  sandboxTest("background, list, connect, kill", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("sleep 30", { background: true });
    expect((await sandbox.commands.list()).map((p) => p.pid)).toContain(handle.pid);
    const again = await sandbox.commands.connect(handle.pid);
    expect(again.pid).toBe(handle.pid);
    expect(await sandbox.commands.kill(handle.pid)).toBe(true);
    await expect(handle.wait()).rejects.toBeInstanceOf(CommandExitError);
    expect(await sandbox.commands.kill(handle.pid)).toBe(false);
  });

  sandboxTest("stdin: send and close", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("cat", { background: true, stdin: true });
    await sandbox.commands.sendStdin(handle.pid, "hello\n");
    await sandbox.commands.closeStdin(handle.pid);
    const result = await handle.wait();
    expect(result.stdout).toBe("hello\n");
  });

  sandboxTest("disconnect keeps the process running", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("sleep 2; echo done > /tmp/done", { background: true });
    await handle.disconnect();
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await sandbox.files.read("/tmp/done")).trim()).toBe("done");
  });

  sandboxTest("timeoutMs bounds the command", async ({ sandbox }) => {
    await expect(sandbox.commands.run("sleep 10", { timeoutMs: 1_000 })).rejects.toBeInstanceOf(TimeoutError);
  });

  sandboxTest("killing the sandbox mid-run drops the stream (sandboxKilledDuringRun)", async ({ spawn }) => {
    const sbx = await spawn();
    // Catch at once: the rejection arrives while the kill is in flight, before anything awaits `run`.
    const run = sbx.commands.run("sleep 60").catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 1_000));
    await Sandbox.kill(sbx.sandboxId, sdkOpts());
    const err = await run;
    expect(err).toBeInstanceOf(TimeoutError);
    expect(String((err as Error).message)).toMatch(/sandbox was killed/i);
  });
});
