// burrow-reaper against real clients on its unix socket and real launches: a client that connects and sends
// nothing, or half a request, or more connections than the reaper reads at once, never holds up a launch; such
// clients are answered with an error and closed once their time is up.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSandboxInitAlive, launcherBinaryPath } from "../src/launcher/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, runThroughReaper, type ReaperPaths } from "../src/reaper/reaper.js";
import { ensureTestRootfs } from "./helpers/base-rootfs.js";
import { POLL } from "./helpers/poll.js";
import { makeMiniRuntime, SandboxFixture, stopTestReaper } from "./helpers/sandbox-fixture.js";

let fx: SandboxFixture;
let stateDir: string;
let paths: ReaperPaths;
let reaperPid: number;
const clients: Socket[] = [];

/** A connection to the reaper that has been accepted by the kernel; collects what the reaper answers. */
async function client(): Promise<{ socket: Socket; answer: Promise<string> }> {
  const socket = connect(paths.socket);
  clients.push(socket);
  let text = "";
  socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const answer = new Promise<string>((resolve) => socket.once("close", () => resolve(text)));
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => undefined);
  return { socket, answer };
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

/** Launch a real sandbox through the reaper and check that it runs as the reaper's child. */
async function launchThroughReaper(): Promise<void> {
  const sandbox = await fx.launch({ command: ["/bin/sleep", "infinity"], reaper: paths });
  expect(isSandboxInitAlive(sandbox.pid, sandbox.startTime)).toBe(true);
  // The launcher may still be exiting: the init is the reaper's once the launcher is gone.
  await expect.poll(() => parentOf(sandbox.pid), { ...POLL, message: "the sandbox init to be the reaper's child" }).toBe(reaperPid);
  await fx.kill(sandbox);
}

beforeAll(async () => {
  fx = new SandboxFixture(await ensureTestRootfs());
  fx.runtime = await makeMiniRuntime(await fx.dir());
  stateDir = await mkdtemp("/var/tmp/burrow-reaper-test-");
  paths = reaperPaths(stateDir);
  const launcher = launcherBinaryPath();
  // A short request timeout keeps the test quick; the default (60 s) is for loaded hosts.
  reaperPid = await ensureReaper(paths, { reaper: reaperBinaryPath(launcher), launcher, requestTimeoutMs: 3000 });
});

afterAll(async () => {
  for (const socket of clients.splice(0)) socket.destroy();
  try {
    await fx.cleanup();
  } finally {
    await stopTestReaper(paths, reaperPid);
    await rm(stateDir, { recursive: true, force: true });
  }
});

describe("burrow-reaper", () => {
  it("launches while a client that sent nothing stays connected, and answers that client once its time is up", { timeout: 60_000 }, async () => {
    const silent = await client();
    await launchThroughReaper();
    // Still served after the silent client: a second launch.
    await launchThroughReaper();
    // The silent client is not kept forever: it gets the reaper's error line and the connection ends.
    const answer = await silent.answer;
    expect(answer).toMatch(/"error":"launch request incomplete after 3000 ms","step":"reaper-request"/);
  });

  it("launches while a client that sent half a request stays connected", { timeout: 60_000 }, async () => {
    const half = await client();
    half.socket.write("--lower\0/nonexistent\0--upp");
    await launchThroughReaper();
    expect(await half.answer).toMatch(/"step":"reaper-request"/);
  });

  it("launches when more clients sit silent than the reaper reads at once", { timeout: 120_000 }, async () => {
    const silent = await Promise.all(Array.from({ length: 80 }, () => client()));
    await launchThroughReaper();
    for (const { answer } of silent) expect(await answer).toMatch(/"step":"reaper-request"/);
  });

  it("answers a request cut short or too long with an error, and still launches", { timeout: 60_000 }, async () => {
    const cut = await client();
    cut.socket.end("--lower\0/x");
    expect(await cut.answer).toMatch(/"error":"malformed launch request","step":"reaper-request"/);

    const long = await client();
    long.socket.write(Buffer.alloc(256 * 1024, "a"));
    expect(await long.answer).toMatch(/"error":"malformed launch request"/);

    // The reaper's own client sends a whole request: the launcher runs and reports its usage error.
    const report = await runThroughReaper(paths, ["--hostname", "x"]);
    expect(report).toMatch(/"error":/);
    expect(report).not.toMatch(/reaper-request/);
    await launchThroughReaper();
  });
});
