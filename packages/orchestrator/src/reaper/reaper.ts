// Client side of burrow-reaper (native/reaper/reaper.c): makes sure one reaper runs per state directory and
// asks it to run the launcher, so that every sandbox init becomes the reaper's child and is reaped when it
// exits, even while no server runs and whatever the host's PID 1 does.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";

export interface ReaperPaths {
  socket: string;
  pidfile: string;
}

/** The reaper binary, built next to the launcher by native/build.sh. */
export function reaperBinaryPath(launcherPath: string): string {
  return join(dirname(launcherPath), "burrow-reaper");
}

export function reaperPaths(stateDir: string): ReaperPaths {
  return { socket: join(stateDir, "reaper.sock"), pidfile: join(stateDir, "reaper.pid") };
}

export function reaperPid(paths: ReaperPaths): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(paths.pidfile, "utf8"), 10);
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return cmdline.includes("burrow-reaper") && cmdline.includes(paths.socket) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Start the reaper of this state directory unless it already runs. `requestTimeoutMs`: how long a connection may
 * take to send its whole request (the reaper's default, 60 s, when left out).
 */
export async function ensureReaper(paths: ReaperPaths, binaries: { reaper: string; launcher: string; requestTimeoutMs?: number }): Promise<number> {
  const running = reaperPid(paths);
  if (running && existsSync(paths.socket)) return running;
  rmSync(paths.pidfile, { force: true });
  const args = ["--socket", paths.socket, "--pidfile", paths.pidfile, "--launcher", binaries.launcher];
  if (binaries.requestTimeoutMs !== undefined) args.push("--request-timeout-ms", String(binaries.requestTimeoutMs));
  // The reaper stays our child (and is reaped by Node when it exits); unref so it never keeps Node alive.
  const child = spawn(binaries.reaper, args, {
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.unref();
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  (child.stderr as { unref?: () => void } | null)?.unref?.();
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  for (let i = 0; i < 500; i++) {
    const pid = reaperPid(paths);
    if (pid && existsSync(paths.socket)) return pid;
    if (exited !== undefined) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new BurrowError(Code.Internal, `burrow-reaper did not start (exit ${String(exited)}): ${stderr.trim()}`, { reason: "reaper_not_started" });
}

/** How long a reaper asked to stop may take to exit (it exits at its next poll). */
const STOP_TIMEOUT_MS = 5000;

/**
 * Stop the reaper (after every sandbox is gone) and wait until it has exited, so that a caller that then checks
 * (or starts another for the same directory) finds none.
 */
export async function stopReaper(paths: ReaperPaths): Promise<void> {
  const pid = reaperPid(paths);
  if (!pid) return;
  process.kill(pid, "SIGTERM");
  for (const deadline = Date.now() + STOP_TIMEOUT_MS; reaperPid(paths) === pid; ) {
    if (Date.now() > deadline) throw new BurrowError(Code.DeadlineExceeded, `burrow-reaper (pid ${pid}) did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * How long a launch through the reaper may go without a byte from it. The launcher prints its report when it is
 * done, so this bounds the whole launch; it is far beyond a slow one and only ends a wait that would never end.
 */
const REAPER_IDLE_TIMEOUT_MS = 120_000;

/** How long a canceled launch may take to end: the reaper kills the launcher at once, so this is generous. */
const CANCEL_TIMEOUT_MS = 10_000;

/**
 * Run the launcher with `args` through the reaper; resolves with everything it printed once the launcher is gone.
 *
 * Cancellable: on abort the request is cancelled by shutting down our sending side, which makes the reaper
 * SIGKILL the launcher (and with it a sandbox it had not committed yet); the promise still resolves with what the
 * launcher printed, because one that committed just before has printed the pid of a sandbox that now needs
 * killing. The caller checks the signal. An abort before the request was sent rejects with `canceled`.
 */
export function runThroughReaper(
  paths: ReaperPaths,
  args: string[],
  signal?: AbortSignal,
  idleTimeoutMs = REAPER_IDLE_TIMEOUT_MS,
): Promise<string> {
  return new Promise((resolve, reject) => {
    if (args.some((arg) => arg.length === 0 || arg.includes("\0"))) {
      reject(new BurrowError(Code.InvalidArgument, "launcher arguments must be non-empty and contain no NUL"));
      return;
    }
    if (signal?.aborted) {
      reject(new BurrowError(Code.Canceled, "launch canceled", { cause: signal.reason }));
      return;
    }
    const socket = connect(paths.socket);
    const chunks: Buffer[] = [];
    let sent = false;
    const onAbort = () => {
      if (!sent) {
        socket.destroy(new BurrowError(Code.Canceled, "launch canceled", { cause: signal?.reason }));
        return;
      }
      // The reaper answers a shut-down sending side by killing the launcher, then closes the connection.
      socket.end();
      socket.setTimeout(CANCEL_TIMEOUT_MS, () =>
        socket.destroy(new BurrowError(Code.Canceled, `burrow-reaper did not end a canceled launch within ${CANCEL_TIMEOUT_MS} ms`)),
      );
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.setTimeout(idleTimeoutMs, () =>
      socket.destroy(new BurrowError(Code.DeadlineExceeded, `burrow-reaper sent nothing for ${idleTimeoutMs} ms`)),
    );
    socket.on("connect", () => {
      sent = true;
      socket.write(`${args.join("\0")}\0\0`);
    });
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error) => {
      signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    socket.on("end", () => {
      signal?.removeEventListener("abort", onAbort);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
  });
}
