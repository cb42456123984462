// Build steps are long-running external tools (debootstrap, dpkg, tar). Each runs in its own
// process group so an abort can kill the whole tree, not just the direct child.
import { spawn } from "node:child_process";
import { BurrowError, Code } from "@burrow/protocol";

/** Anything with `info` (console, pino) receives progress lines. */
export interface RootfsLogger {
  info(message: string): void;
}

export interface RunOptions {
  signal?: AbortSignal | undefined;
  log?: RootfsLogger | undefined;
  env?: NodeJS.ProcessEnv;
  /** Prefix for logged output lines. */
  label: string;
}

const TAIL_BYTES = 4096;

/** Run a command to completion; rejects with `command_failed` (with the output tail) or `aborted`. */
export function runCommand(cmd: string, args: string[], opts: RunOptions): Promise<void> {
  const { signal, log, label } = opts;
  if (signal?.aborted) return Promise.reject(new BurrowError(Code.Canceled, `${label}: aborted before start`));
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: opts.env ?? { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8" },
    });
    let tail = "";
    let partial = "";
    const onData = (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      tail = (tail + text).slice(-TAIL_BYTES);
      if (!log) return;
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const l of lines) if (l.trim() !== "") log.info(`${label}: ${l}`);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const onAbort = () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // The group is already gone: nothing left to kill.
        }
      }
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (err) => {
      signal?.removeEventListener("abort", onAbort);
      reject(new BurrowError(Code.Internal, `${label}: cannot start ${cmd}: ${err.message}`, { reason: "command_failed", cause: err }));
    });
    child.on("close", (code, sig) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) reject(new BurrowError(Code.Canceled, `${label}: aborted`, { cause: signal.reason }));
      else if (code === 0) resolve();
      else reject(new BurrowError(Code.Internal, `${label}: ${cmd} exited ${code ?? sig}: ${tail.trim()}`, { reason: "command_failed" }));
    });
  });
}
