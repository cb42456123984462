// The network is configured through the `nft` CLI (Node has no netlink binding; the launcher and burrow-netattach
// plumb veths themselves). Every call feeds a whole batch on stdin, so a sandbox costs one exec, not one per
// setting. The orchestrator runs them through burrow-reaper (CommandRunner), so the server never forks.
import { spawn } from "node:child_process";
import type { CommandResult, CommandRunner, RunCommandOptions } from "../reaper/run-command.js";
import { NetworkError } from "./network-error.js";

export interface ExecOptions {
  /** Text written to the child's stdin (an `ip -batch -` or `nft -f -` script). */
  input?: string;
  signal?: AbortSignal | undefined;
}

const ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C" };

/** A CommandRunner that forks from this process: for tests and tools that have no reaper. */
export const spawnCommand: CommandRunner = (cmd, args, opts: RunCommandOptions = {}) =>
  new Promise<CommandResult>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], env: ENV, signal: opts.signal });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    // A child that exits before reading all of stdin makes the write fail with EPIPE; its exit status
    // and stderr tell the real story, so the stream error itself is not interesting.
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input ?? "");
    child.on("error", reject);
    child.on("close", (code, signal) =>
      resolve({ code, signal, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }),
    );
  });

/** Run a command to completion and return its stdout; non-zero exit → `command_failed` with stderr. */
export async function exec(cmd: string, args: readonly string[], opts: ExecOptions = {}, run: CommandRunner = spawnCommand): Promise<string> {
  const { signal } = opts;
  if (signal?.aborted) throw new NetworkError("aborted", `${cmd}: aborted before start`, { cause: signal.reason });
  let result: CommandResult;
  try {
    result = await run(cmd, args, { input: opts.input, signal });
  } catch (e) {
    if (signal?.aborted) throw new NetworkError("aborted", `${cmd}: aborted`, { cause: signal.reason });
    throw new NetworkError("command_failed", `cannot run ${cmd}: ${(e as Error).message}`, { cause: e });
  }
  if (signal?.aborted) throw new NetworkError("aborted", `${cmd}: aborted`, { cause: signal.reason });
  if (result.code === 0) return result.stdout;
  throw new NetworkError("command_failed", `${cmd} ${args.join(" ")} exited ${result.code ?? result.signal}: ${result.stderr.trim()}`);
}
