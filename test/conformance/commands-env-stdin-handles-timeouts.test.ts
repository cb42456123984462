// More of the process API (SDK tests sandbox/commands/{envVars,run,sendStdin,connect,list,kill,
// sandboxKilledDuringRun}): env precedence, users, cwd, stdin, reconnecting, timeouts as process lifetime.
import { describe, expect } from "vitest";
import { CommandExitError, Sandbox, SandboxError, TimeoutError } from "e2b";
import { sandboxTest, sdkOpts } from "./env.js";

async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("commands: environment", () => {
  sandboxTest("sandbox envs from create, per-command envs, and their precedence", async ({ spawn }) => {
    const sbx = await spawn({ envs: { SBX_ONLY: "s", SHARED: "from-sandbox" } });
    try {
      const both = await sbx.commands.run('echo "$SBX_ONLY $SHARED $CMD_ONLY"', { envs: { CMD_ONLY: "c" } });
      expect(both.stdout).toBe("s from-sandbox c\n");
      const overridden = await sbx.commands.run('echo "$SBX_ONLY $SHARED"', { envs: { SHARED: "from-command" } });
      expect(overridden.stdout).toBe("s from-command\n");
      // Sandbox envs apply to root's commands and to terminals too, and survive a reconnect.
      expect((await sbx.commands.run("echo $SBX_ONLY", { user: "root" })).stdout).toBe("s\n");
      const again = await Sandbox.connect(sbx.sandboxId, sdkOpts());
      expect((await again.commands.run("echo $SHARED")).stdout).toBe("from-sandbox\n");
      // The per-command value did not leak into later commands.
      expect((await sbx.commands.run('echo "[$CMD_ONLY]"')).stdout).toBe("[]\n");
    } finally {
      await sbx.kill();
    }
  });

  sandboxTest("per-command envs can override PATH-like basics and reach python", async ({ sandbox }) => {
    const r = await sandbox.commands.run(`python3 -c 'import os; print(os.environ["GREETING"])'`, { envs: { GREETING: "hi there" } });
    expect(r.stdout).toBe("hi there\n");
  });

  sandboxTest("default user vs root: whoami, id, HOME, default cwd", async ({ sandbox }) => {
    const asUser = await sandbox.commands.run('echo "$(whoami) $(id -u) $HOME $(pwd) $USER"');
    expect(asUser.stdout).toBe("user 1000 /home/user /home/user user\n");
    const asRoot = await sandbox.commands.run('echo "$(whoami) $(id -u) $HOME $(pwd) $USER"', { user: "root" });
    // The default workdir (/init defaultWorkdir, the template's WORKDIR: /home/user) applies to every user.
    expect(asRoot.stdout).toBe("root 0 /root /home/user root\n");
    expect((await sandbox.commands.run("pwd", { user: "root", cwd: "/root" })).stdout).toBe("/root\n");
    expect((await sandbox.commands.run("sudo -n whoami")).stdout).toBe("root\n");
  });

  sandboxTest("cwd: relative to nothing, must exist", async ({ sandbox }) => {
    await sandbox.files.makeDir("/home/user/work/sub");
    expect((await sandbox.commands.run("pwd", { cwd: "/home/user/work/sub" })).stdout).toBe("/home/user/work/sub\n");
    expect((await sandbox.commands.run("pwd", { cwd: "/", user: "root" })).stdout).toBe("/\n");
    await expect(sandbox.commands.run("pwd", { cwd: "/does/not/exist" })).rejects.toBeInstanceOf(SandboxError);
  });

  sandboxTest("an unknown user is refused", async ({ sandbox }) => {
    await expect(sandbox.commands.run("true", { user: "nobody-such" as "user" })).rejects.toThrow();
  });
});

describe("commands: stdin", () => {
  sandboxTest("several sendStdin calls, then closeStdin ends the reader", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("wc -l", { background: true, stdin: true });
    await sandbox.commands.sendStdin(handle.pid, "one\n");
    await sandbox.commands.sendStdin(handle.pid, "two\nthree\n");
    await sandbox.commands.closeStdin(handle.pid);
    expect((await handle.wait()).stdout.trim()).toBe("3");
  });

  sandboxTest("stdin data reaches an interactive program and its answer streams back", async ({ sandbox }) => {
    let out = "";
    const handle = await sandbox.commands.run("read line; echo got:$line; read again; echo got:$again", {
      background: true,
      stdin: true,
      onStdout: (d) => void (out += d),
    });
    await sandbox.commands.sendStdin(handle.pid, "first\n");
    await until(() => out.includes("got:first"), "first echo");
    await sandbox.commands.sendStdin(handle.pid, "second\n");
    const result = await handle.wait();
    expect(result.stdout).toBe("got:first\ngot:second\n");
  });

  sandboxTest("without stdin: true the process sees no input (EOF)", async ({ sandbox }) => {
    expect((await sandbox.commands.run("cat; echo eof")).stdout).toBe("eof\n");
  });
});

describe("commands: handles", () => {
  sandboxTest("list shows cmd, args, envs and cwd of running commands", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("sleep 60", { background: true, cwd: "/tmp", envs: { MARK: "listed" } });
    const listed = (await sandbox.commands.list()).find((p) => p.pid === handle.pid);
    expect(listed).toBeDefined();
    expect(listed!.cmd).toBe("/bin/bash");
    expect(listed!.args.join(" ")).toContain("sleep 60");
    expect(listed!.envs).toMatchObject({ MARK: "listed" });
    expect(listed!.cwd).toBe("/tmp");
    await handle.kill();
    await until(async () => !(await sandbox.commands.list()).some((p) => p.pid === handle.pid), "the killed command to leave the list");
  });

  sandboxTest("connect to a running command receives its later output and exit", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("read x; echo after-$x; exit 7", { background: true, stdin: true });
    await handle.disconnect();
    let seen = "";
    const again = await sandbox.commands.connect(handle.pid, { onStdout: (d) => void (seen += d) });
    await sandbox.commands.sendStdin(handle.pid, "go\n");
    const err = await again.wait().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect((err as CommandExitError).exitCode).toBe(7);
    expect(seen).toBe("after-go\n");
  });

  sandboxTest("a late connect to an exited command gets its exit; it is no longer listed or killable", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("echo early; exit 4", { background: true });
    expect(((await handle.wait().catch((e: unknown) => e)) as CommandExitError).exitCode).toBe(4);
    const late = await sandbox.commands.connect(handle.pid);
    const err = await late.wait().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect((err as CommandExitError).exitCode).toBe(4);
    expect((await sandbox.commands.list()).map((p) => p.pid)).not.toContain(handle.pid);
    expect(await sandbox.commands.kill(handle.pid)).toBe(false);
  });

  sandboxTest("connect to an unknown pid fails", async ({ sandbox }) => {
    await expect(sandbox.commands.connect(999_999)).rejects.toThrow();
  });

  sandboxTest("kill ends the process and its wait; the pid is gone inside the sandbox", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("sleep 300", { background: true });
    expect((await sandbox.commands.run(`kill -0 ${handle.pid} && echo alive`)).stdout).toBe("alive\n");
    expect(await handle.kill()).toBe(true);
    const err = await handle.wait().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect((err as CommandExitError).exitCode).not.toBe(0);
    expect((await sandbox.commands.run(`kill -0 ${handle.pid} 2>/dev/null && echo alive || echo gone`)).stdout).toBe("gone\n");
  });

  sandboxTest("kill of an unknown pid returns false", async ({ sandbox }) => {
    expect(await sandbox.commands.kill(999_999)).toBe(false);
  });
});

describe("commands: timeouts and sandbox death", () => {
  sandboxTest("timeoutMs is the process lifetime: the process is killed, not just the stream", async ({ sandbox }) => {
    const err = await sandbox.commands.run("sleep 37; echo never", { timeoutMs: 1_500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    await until(
      async () => (await sandbox.commands.run("pgrep -f 'slee[p] 37' || true")).stdout.trim() === "",
      "the timed-out process to be killed",
    );
  });

  sandboxTest("a background command's timeout kills it too", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("sleep 38", { background: true, timeoutMs: 1_500 });
    await expect(handle.wait()).rejects.toThrow();
    await until(async () => !(await sandbox.commands.list()).some((p) => p.pid === handle.pid), "the command to end");
  });

  sandboxTest("a connect's timeoutMs ends only that stream, not the process", async ({ sandbox }) => {
    const handle = await sandbox.commands.run("sleep 39", { background: true, timeoutMs: 0 });
    await handle.disconnect();
    const again = await sandbox.commands.connect(handle.pid, { timeoutMs: 1_000 });
    await expect(again.wait()).rejects.toBeInstanceOf(TimeoutError);
    expect((await sandbox.commands.list()).map((p) => p.pid)).toContain(handle.pid);
    expect((await sandbox.commands.run("pgrep -f 'slee[p] 39'")).stdout.trim()).not.toBe("");
    expect(await sandbox.commands.kill(handle.pid)).toBe(true);
  });

  sandboxTest("timeoutMs: 0 means no limit", async ({ sandbox }) => {
    expect((await sandbox.commands.run("sleep 2; echo done", { timeoutMs: 0 })).stdout).toBe("done\n");
  });

  sandboxTest("a background command whose sandbox is killed: wait rejects, isRunning is false", async ({ spawn }) => {
    const sbx = await spawn();
    try {
      const handle = await sbx.commands.run("sleep 120", { background: true });
      const waited = handle.wait().catch((e: unknown) => e);
      await Sandbox.kill(sbx.sandboxId, sdkOpts());
      const err = await waited;
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(CommandExitError);
      expect(await sbx.isRunning()).toBe(false);
      await expect(sbx.commands.run("true")).rejects.toThrow();
    } finally {
      await sbx.kill().catch(() => undefined);
    }
  });
});
