// Terminals (SDK tests sandbox/pty/*).
import { describe, expect } from "vitest";
import { sandboxTest } from "./env.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

describe("pty", () => {
  sandboxTest("create, input, output, exit", async ({ sandbox }) => {
    let output = "";
    const term = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => void (output += dec.decode(d)) });
    await sandbox.pty.sendInput(term.pid, enc.encode("echo pty-$((40+2))\nexit\n"));
    await term.wait();
    expect(output).toContain("pty-42");
  });

  sandboxTest("resize is visible to the shell", async ({ sandbox }) => {
    let output = "";
    const term = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => void (output += dec.decode(d)) });
    await sandbox.pty.resize(term.pid, { cols: 123, rows: 45 });
    await sandbox.pty.sendInput(term.pid, enc.encode("stty size\nexit\n"));
    await term.wait();
    expect(output).toContain("45 123");
  });

  sandboxTest("kill and reconnect", async ({ sandbox }) => {
    const term = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => undefined });
    let later = "";
    const again = await sandbox.pty.connect(term.pid, { onData: (d) => void (later += dec.decode(d)) });
    await sandbox.pty.sendInput(term.pid, enc.encode("echo reconnected\n"));
    await new Promise((r) => setTimeout(r, 500));
    expect(later).toContain("reconnected");
    expect(await sandbox.pty.kill(term.pid)).toBe(true);
    await expect(again.wait()).rejects.toThrow();
  });
});
