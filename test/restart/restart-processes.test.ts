// What runs inside a sandbox outlives the server: a server killed with SIGKILL resets every connection it proxied
// to envd, and the background commands and PTYs those connections had started must keep running in the
// re-adopted sandbox, reachable again through the restarted server.
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { processExists, sandboxInternals } from "../helpers/sandbox-internals.js";
import { newTestInstance } from "../helpers/test-instance.js";

describe("restart keeps what runs", () => {
  const instance = newTestInstance("restart-procs");
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("background commands and open PTYs survive a server SIGKILL and answer after the restart", async () => {
    const port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const sandbox = await Sandbox.create("base", opts);
    const inside = sandboxInternals(instance.stateDir, sandbox.sandboxId);
    const envdBefore = await envdIdentity(sandbox);

    // An unbounded lifetime (timeoutMs 0) and a bounded one that outlasts the test (the SDK's default of 60 s
    // could run out during a slow restart, and then envd ends the command as E2B's does); both still attached
    // when the server dies, so their streams are reset rather than closed.
    const unbounded = await sandbox.commands.run("sleep 999", { background: true, timeoutMs: 0 });
    const bounded = await sandbox.commands.run("sleep 998", { background: true, timeoutMs: 20 * 60_000 });
    let ptyOutput = "";
    const pty = await sandbox.pty.create({
      cols: 80,
      rows: 24,
      timeoutMs: 0,
      onData: (data) => {
        ptyOutput += new TextDecoder().decode(data);
      },
    });
    await sandbox.pty.sendInput(pty.pid, new TextEncoder().encode("echo pty-before-$((6*7))\n"));
    await waitFor(() => ptyOutput.includes("pty-before-42"));
    const pids = [unbounded.pid, bounded.pid, pty.pid];
    expect(new Set((await sandbox.commands.list()).map((p) => p.pid))).toEqual(new Set(pids));

    await stopServerProcess(server, "SIGKILL");
    expect(processExists(inside.pid)).toBe(true);

    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const again = await Sandbox.connect(sandbox.sandboxId, { ...opts, apiKey: server.apiKey });
    expect(await envdIdentity(again)).toBe(envdBefore);
    const listed = await again.commands.list();
    expect(new Set(listed.map((p) => p.pid))).toEqual(new Set(pids));
    const alive = await again.commands.run(`for p in ${pids.join(" ")}; do kill -0 $p && echo $p; done`);
    expect(alive.stdout.trim().split("\n").map(Number).sort()).toEqual([...pids].sort());

    // The PTY still has its shell: a fresh connection sees what the shell answers to new input.
    let reattached = "";
    const handle = await again.pty.connect(pty.pid, {
      timeoutMs: 0,
      onData: (data) => {
        reattached += new TextDecoder().decode(data);
      },
    });
    await again.pty.sendInput(pty.pid, new TextEncoder().encode("echo pty-after-$((6*8))\n"));
    await waitFor(() => reattached.includes("pty-after-48"));
    await handle.disconnect();

    expect(await again.commands.kill(unbounded.pid)).toBe(true);
    expect(await again.commands.kill(bounded.pid)).toBe(true);
    expect(await again.pty.kill(pty.pid)).toBe(true);
    expect(await Sandbox.kill(sandbox.sandboxId, opts)).toBe(true);
  });
});

/** envd's pid and start time (field 22 of /proc/<pid>/stat): the same envd before and after the restart. */
async function envdIdentity(sandbox: Sandbox): Promise<string> {
  const r = await sandbox.commands.run(
    "p=$(pgrep -of '/.burrow/envd/envd'); echo $p $(cut -d' ' -f22 /proc/$p/stat)",
  );
  const value = r.stdout.trim();
  expect(value).toMatch(/^\d+ \d+$/);
  return value;
}

async function waitFor(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
