// Host commands (nft, ip, btrfs…) run by burrow-reaper instead of forked from this process. Node forks a child with
// a plain fork() on its event-loop thread, which copies the page tables of the whole heap: milliseconds for a
// server, tens of them on a loaded host, and the event loop stands still meanwhile. The reaper is a small process
// and forks in microseconds (native/reaper/command.c has the protocol).
import { connect } from "node:net";
import { constants } from "node:os";
import { BurrowError, Code } from "@burrow/protocol";
import type { ReaperPaths } from "./reaper.js";

export interface CommandResult {
  /** Exit code, or null when a signal ended the command. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunCommandOptions {
  /** Written to the command's stdin (then closed). */
  input?: string | undefined;
  /** Aborting kills the command and rejects with `canceled`. */
  signal?: AbortSignal | undefined;
}

/** Runs `cmd` with `args` (looked up in the usual system PATH, environment PATH and LANG=C) to completion. */
export type CommandRunner = (cmd: string, args: readonly string[], opts?: RunCommandOptions) => Promise<CommandResult>;

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name as NodeJS.Signals]));

/** The reaper at `paths` as a CommandRunner. */
export function reaperCommandRunner(paths: ReaperPaths): CommandRunner {
  return (cmd, args, opts = {}) => runCommandThroughReaper(paths, cmd, args, opts);
}

export function runCommandThroughReaper(paths: ReaperPaths, cmd: string, args: readonly string[], opts: RunCommandOptions = {}): Promise<CommandResult> {
  const { signal } = opts;
  return new Promise((resolve, reject) => {
    if ([cmd, ...args].some((arg) => arg.length === 0 || arg.includes("\0"))) {
      reject(new BurrowError(Code.InvalidArgument, `${cmd}: arguments must be non-empty and contain no NUL`));
      return;
    }
    if (signal?.aborted) {
      reject(new BurrowError(Code.Canceled, `${cmd}: canceled`, { cause: signal.reason }));
      return;
    }
    const socket = connect(paths.socket);
    const onAbort = () => socket.destroy(new BurrowError(Code.Canceled, `${cmd}: canceled`, { cause: signal?.reason }));
    signal?.addEventListener("abort", onAbort, { once: true });
    let buffered: Buffer = Buffer.alloc(0);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let status: number | undefined;
    socket.on("connect", () => {
      // One write for the request and its stdin, then the shut-down: a command that needs no stdin can finish and
      // its worker close the connection within microseconds of the request, and a second write (even an empty
      // one) would then fail with EPIPE and lose the answer already on its way.
      socket.end(Buffer.concat([Buffer.from(`--exec\0${[cmd, ...args].join("\0")}\0\0`), Buffer.from(opts.input ?? "")]));
    });
    socket.on("data", (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (buffered.length >= 5) {
        const type = String.fromCharCode(buffered[0] ?? 0);
        const length = buffered.readUInt32LE(1);
        if (type === "{") {
          // The reaper refused the request (one JSON line, not frames).
          socket.destroy(new BurrowError(Code.Unavailable, `burrow-reaper refused to run ${cmd}: ${buffered.toString("utf8").trim()}`));
          return;
        }
        if (buffered.length < 5 + length) return;
        const body = buffered.subarray(5, 5 + length);
        buffered = buffered.subarray(5 + length);
        if (type === "o") stdout.push(body);
        else if (type === "e") stderr.push(body);
        else if (type === "x") status = body.readUInt32LE(0);
      }
    });
    const finish = () => {
      signal?.removeEventListener("abort", onAbort);
      if (status === undefined) {
        reject(new BurrowError(Code.Unavailable, `burrow-reaper ended ${cmd} without an exit status`));
        return;
      }
      // A wait status: low 7 bits the terminating signal (0 for a normal exit), then the exit code.
      const termSignal = status & 0x7f;
      resolve({
        code: termSignal === 0 ? (status >> 8) & 0xff : null,
        signal: termSignal === 0 ? null : (SIGNAL_NAMES.get(termSignal) ?? "SIGKILL"),
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
      });
    };
    socket.on("error", (error) => {
      // The exit status already arrived: the command ran to its end (its worker closed while stdin was still
      // being sent to a command that did not read it).
      if (status !== undefined && !(error instanceof BurrowError)) return finish();
      signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    socket.on("end", finish);
  });
}
