// A launch through burrow-reaper is cancellable: a client that gives up (aborts, shuts down its side, or goes away
// altogether) gets the launcher killed, and the connection ends only once the launcher is gone. The launcher here
// is a stand-in script that records its pid and then blocks, so the test controls when a launch is "in progress";
// a real launch canceled through launchSandbox leaves no sandbox behind.
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Code } from "@burrow/protocol";
import { launcherBinaryPath, launchSandbox, LaunchError } from "../src/launcher/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, runThroughReaper, type ReaperPaths } from "../src/reaper/reaper.js";
import { POLL } from "./helpers/poll.js";
import { isRunning, stopTestReaper } from "./helpers/sandbox-fixture.js";

let dir: string;
let paths: ReaperPaths;
let reaperPid: number;
let pidFile: string;

/** The pid the stand-in launcher named `name` (its first argument) wrote, once it has started. */
function launcherPid(name: string | number): Promise<number> {
  return vi.waitFor(async () => {
    const text = (await readFile(`${pidFile}.${name}`, "utf8")).trim();
    if (!text) throw new Error(`stand-in launcher ${name} has not written its pid yet`);
    return Number(text);
  }, POLL);
}

beforeAll(async () => {
  dir = await mkdtemp("/var/tmp/burrow-reaper-cancel-");
  pidFile = join(dir, "launcher.pid");
  // Prints a line (so a canceled client still gets output), records its pid under the name given as its first
  // argument, and blocks until killed.
  const script = join(dir, "slow-launcher");
  await writeFile(script, `#!/bin/sh\necho started\necho $$ > ${pidFile}.$1\nexec sleep 600\n`);
  await chmod(script, 0o755);
  paths = reaperPaths(dir);
  reaperPid = await ensureReaper(paths, { reaper: reaperBinaryPath(launcherBinaryPath()), launcher: script });
});

afterAll(async () => {
  await stopTestReaper(paths, reaperPid);
  await rm(dir, { recursive: true, force: true });
});

describe("canceling a launch through burrow-reaper", () => {
  it("kills the launcher when the client aborts, and ends the connection only once it is gone", { timeout: 30_000 }, async () => {
    const controller = new AbortController();
    const output = runThroughReaper(paths, ["1"], controller.signal);
    const pid = await launcherPid(1);
    expect(isRunning(pid)).toBe(true);
    controller.abort();
    // Resolves (with what the launcher printed) rather than rejecting: a launcher that committed just before the
    // cancel printed a pid the caller must kill.
    expect(await output).toBe("started\n");
    expect(isRunning(pid)).toBe(false);
  });

  it("kills the launcher when the client goes away without a word", { timeout: 30_000 }, async () => {
    const socket = connect(paths.socket);
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    socket.write("2\0\0");
    const pid = await launcherPid(2);
    socket.destroy();
    await expect.poll(() => isRunning(pid), { ...POLL, message: "the launcher of a vanished client to be killed" }).toBe(false);
  });

  it("leaves other launches running when one is canceled", { timeout: 30_000 }, async () => {
    const keep = new AbortController();
    const kept = runThroughReaper(paths, ["3"], keep.signal);
    const cancel = new AbortController();
    const canceled = runThroughReaper(paths, ["4"], cancel.signal);
    const [keptPid, canceledPid] = await Promise.all([launcherPid(3), launcherPid(4)]);
    cancel.abort();
    await canceled;
    expect(isRunning(canceledPid)).toBe(false);
    expect(isRunning(keptPid)).toBe(true);
    keep.abort();
    await kept;
    expect(isRunning(keptPid)).toBe(false);
  });

  it("rejects an abort before the request was sent, and launchSandbox reports a canceled launch as aborted", { timeout: 30_000 }, async () => {
    await expect(runThroughReaper(paths, ["5"], AbortSignal.abort())).rejects.toMatchObject({ code: Code.Canceled });
    const controller = new AbortController();
    const launch = launchSandbox(
      { lower: ["/l"], upper: "/u/upper", work: "/u/work", merged: "/m", runtime: "/r", hostname: "h", uidBase: 100000, log: "/log", command: ["6"], reaper: paths },
      controller.signal,
    );
    // The stand-in takes the launcher's first argument as its name: "--lower" here.
    const pid = await launcherPid("--lower");
    controller.abort();
    await expect(launch).rejects.toBeInstanceOf(LaunchError);
    await expect(launch).rejects.toMatchObject({ code: "aborted" });
    expect(isRunning(pid)).toBe(false);
  });
});
