// Host commands run through burrow-reaper (the server does not fork them itself): output, stdin, exit status and
// signals come back as the command produced them, concurrent commands do not mix, and a canceled command is killed.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Code } from "@burrow/protocol";
import { launcherBinaryPath } from "../src/launcher/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, type ReaperPaths } from "../src/reaper/reaper.js";
import { runCommandThroughReaper } from "../src/reaper/run-command.js";
import { POLL } from "./helpers/poll.js";
import { isRunning, stopTestReaper } from "./helpers/sandbox-fixture.js";

let dir: string;
let paths: ReaperPaths;
let reaperPid: number;

beforeAll(async () => {
  dir = await mkdtemp("/var/tmp/burrow-reaper-command-");
  paths = reaperPaths(dir);
  const launcher = launcherBinaryPath();
  reaperPid = await ensureReaper(paths, { reaper: reaperBinaryPath(launcher), launcher });
});

afterAll(async () => {
  await stopTestReaper(paths, reaperPid);
  await rm(dir, { recursive: true, force: true });
});

describe("commands through burrow-reaper", () => {
  it("returns stdout, stderr and the exit code, with a fixed environment", async () => {
    const r = await runCommandThroughReaper(paths, "sh", ["-c", 'echo out; echo err >&2; echo "$PATH $LANG $HOME"; exit 3']);
    expect(r).toEqual({ code: 3, signal: null, stdout: "out\n/usr/sbin:/usr/bin:/sbin:/bin C \n", stderr: "err\n" });
  });

  it("feeds stdin, large in and out, and keeps concurrent commands apart", async () => {
    const big = "x".repeat(3 * 1024 * 1024);
    const [a, b] = await Promise.all([
      runCommandThroughReaper(paths, "cat", [], { input: big }),
      runCommandThroughReaper(paths, "sh", ["-c", "head -c 2000000 /dev/zero | tr '\\0' y; printf done >&2"]),
    ]);
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(big);
    expect(b.stdout).toBe("y".repeat(2_000_000));
    expect(b.stderr).toBe("done");
  });

  it("answers commands that end at once, hundreds at a time, and one that ignores a large stdin", async () => {
    // A command that needs no stdin can end (and its worker close) before the client is done sending: the answer
    // must still arrive, never an EPIPE.
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => runCommandThroughReaper(paths, i % 2 ? "true" : "no-such-burrow-tool", [])));
    expect(results.filter((r, i) => r.code !== (i % 2 ? 0 : 127))).toEqual([]);
    const ignored = await runCommandThroughReaper(paths, "true", [], { input: "z".repeat(4 * 1024 * 1024) });
    expect(ignored).toMatchObject({ code: 0, signal: null });
  });

  it("reports a command killed by a signal, and one that cannot be run", async () => {
    expect(await runCommandThroughReaper(paths, "sh", ["-c", "kill -TERM $$"])).toMatchObject({ code: null, signal: "SIGTERM" });
    const missing = await runCommandThroughReaper(paths, "no-such-burrow-tool", []);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/cannot run no-such-burrow-tool/);
  });

  it("kills a canceled command", { timeout: 30_000 }, async () => {
    const pidFile = join(dir, "sleeper.pid");
    const controller = new AbortController();
    const run = runCommandThroughReaper(paths, "sh", ["-c", `echo $$ > ${pidFile}; exec sleep 600`], { signal: controller.signal });
    const pid = await vi.waitFor(async () => {
      const text = (await readFile(pidFile, "utf8")).trim();
      if (!text) throw new Error("the command has not written its pid yet");
      return Number(text);
    }, POLL);
    controller.abort();
    await expect(run).rejects.toMatchObject({ code: Code.Canceled });
    await expect.poll(() => isRunning(pid), { ...POLL, message: "the canceled command to be killed" }).toBe(false);
  });
});
