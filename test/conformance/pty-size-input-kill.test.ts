// Terminals beyond the basics (SDK tests sandbox/pty/{ptyCreate,resize,sendInput,kill,ptyConnect}).
import { describe, expect } from "vitest";
import { sandboxTest } from "./env.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("pty", () => {
  sandboxTest("the initial size is the requested one; each resize is seen by stty", async ({ sandbox }) => {
    let out = "";
    const term = await sandbox.pty.create({ cols: 100, rows: 30, onData: (d) => void (out += dec.decode(d)) });
    await sandbox.pty.sendInput(term.pid, enc.encode("stty size\n"));
    await until(() => out.includes("30 100"), "initial size");
    await sandbox.pty.resize(term.pid, { cols: 60, rows: 20 });
    await sandbox.pty.sendInput(term.pid, enc.encode("stty size\n"));
    await until(() => out.includes("20 60"), "first resize");
    await sandbox.pty.resize(term.pid, { cols: 200, rows: 50 });
    await sandbox.pty.sendInput(term.pid, enc.encode("stty size; exit\n"));
    await term.wait();
    expect(out).toContain("50 200");
  });

  sandboxTest("it is a real terminal: tty, TERM, user, home, envs, cwd", async ({ sandbox }) => {
    let out = "";
    const term = await sandbox.pty.create({
      cols: 80,
      rows: 24,
      cwd: "/tmp",
      envs: { PTY_VAR: "pv" },
      onData: (d) => void (out += dec.decode(d)),
    });
    await sandbox.pty.sendInput(term.pid, enc.encode('echo "R:$(tty) $TERM $(whoami) $HOME $(pwd) $PTY_VAR"; exit\n'));
    await term.wait();
    expect(out).toMatch(/R:\/dev\/pts\/\d+ xterm-256color user \/home\/user \/tmp pv/);
  });

  sandboxTest("a root terminal", async ({ sandbox }) => {
    let out = "";
    const term = await sandbox.pty.create({ cols: 80, rows: 24, user: "root", onData: (d) => void (out += dec.decode(d)) });
    await sandbox.pty.sendInput(term.pid, enc.encode('echo "R:$(id -u)"; exit\n'));
    await term.wait();
    expect(out).toContain("R:0");
  });

  sandboxTest("sendInput delivers control bytes: Ctrl-C interrupts, Ctrl-D exits", async ({ sandbox }) => {
    let out = "";
    const term = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => void (out += dec.decode(d)) });
    // The quotes keep the typed (echoed) line from containing the word the command would print.
    await sandbox.pty.sendInput(term.pid, enc.encode('sleep 100; echo fin""ished\n'));
    let sleeping = "";
    for (let i = 0; i < 100 && !sleeping; i++) {
      sleeping = (await sandbox.commands.run("pgrep -x sleep || true")).stdout.trim();
    }
    expect(sleeping).not.toBe("");
    await sandbox.pty.sendInput(term.pid, new Uint8Array([0x03]));
    await sandbox.pty.sendInput(term.pid, enc.encode("echo after-$((6*7))\n"));
    await until(() => out.includes("after-42"), "the shell to come back after Ctrl-C");
    expect(out).not.toContain("finished");
    await sandbox.pty.sendInput(term.pid, new Uint8Array([0x04]));
    const result = await term.wait();
    expect(result.exitCode).toBe(0);
  });

  sandboxTest("kill ends the terminal: true, then false; the shell is gone", async ({ sandbox }) => {
    const term = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => undefined });
    const waited = term.wait().catch((e: unknown) => e);
    expect(await sandbox.pty.kill(term.pid)).toBe(true);
    expect(await waited).toBeInstanceOf(Error);
    expect(await sandbox.pty.kill(term.pid)).toBe(false);
    expect((await sandbox.commands.run(`kill -0 ${term.pid} 2>/dev/null && echo alive || echo gone`)).stdout).toBe("gone\n");
  });

  sandboxTest("a pty.connect timeout ends that stream only; the terminal lives on", async ({ sandbox }) => {
    let out = "";
    const term = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => undefined });
    await term.disconnect();
    const short = await sandbox.pty.connect(term.pid, { onData: () => undefined, timeoutMs: 1_000 });
    await expect(short.wait()).rejects.toThrow(/timed out|timeout/i);
    const again = await sandbox.pty.connect(term.pid, { onData: (d) => void (out += dec.decode(d)) });
    await sandbox.pty.sendInput(term.pid, enc.encode("echo still-$((1+1)); exit\n"));
    await again.wait();
    expect(out).toContain("still-2");
  });

  sandboxTest("resize of an unknown pid fails", async ({ sandbox }) => {
    await expect(sandbox.pty.resize(999_999, { cols: 10, rows: 10 })).rejects.toThrow();
  });
});
