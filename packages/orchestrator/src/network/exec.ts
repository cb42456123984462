// The network is configured through the `ip` and `nft` CLIs (Node has no netlink binding). Every call
// feeds a whole batch on stdin, so one sandbox attach costs a handful of execs, not one per setting.
import { spawn } from "node:child_process";
import { NetworkError } from "./network-error.js";

export interface ExecOptions {
  /** Text written to the child's stdin (an `ip -batch -` or `nft -f -` script). */
  input?: string;
  signal?: AbortSignal | undefined;
}

const ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C" };

/** Run a command to completion and return its stdout; non-zero exit → `command_failed` with stderr. */
export function exec(cmd: string, args: readonly string[], opts: ExecOptions = {}): Promise<string> {
  const { signal } = opts;
  if (signal?.aborted) {
    return Promise.reject(new NetworkError("aborted", `${cmd}: aborted before start`, { cause: signal.reason }));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], env: ENV, signal });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    // A child that exits before reading all of stdin makes the write fail with EPIPE; its exit status
    // and stderr tell the real story, so the stream error itself is not interesting.
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input ?? "");
    child.on("error", (e) => {
      if (signal?.aborted) reject(new NetworkError("aborted", `${cmd}: aborted`, { cause: signal.reason }));
      else reject(new NetworkError("command_failed", `cannot run ${cmd}: ${e.message}`, { cause: e }));
    });
    child.on("close", (code, sig) => {
      if (signal?.aborted) {
        reject(new NetworkError("aborted", `${cmd}: aborted`, { cause: signal.reason }));
      } else if (code === 0) {
        resolve(Buffer.concat(out).toString("utf8"));
      } else {
        const stderr = Buffer.concat(err).toString("utf8").trim();
        reject(new NetworkError("command_failed", `${cmd} ${args.join(" ")} exited ${code ?? sig}: ${stderr}`));
      }
    });
  });
}
