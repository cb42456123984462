import type { SandboxUser } from "../users/user-db.js";
import { execHelperPath } from "../native/native-modules.js";

export type OutputStream = "stdout" | "stderr" | "pty";

/** What envd needs from a running process, whether it has pipes or a PTY. */
export interface ProcessIO {
  readonly pid: number;
  readonly isPty: boolean;
  /** Whether input can still be written (stdin requested and not closed, or a PTY). */
  readonly hasInput: boolean;
  write(data: Buffer): void;
  closeStdin(): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  onData(cb: (stream: OutputStream, data: Buffer) => void): void;
  /** Called once, after the output has been flushed. */
  onExit(cb: (code: number | null, signal: NodeJS.Signals | number | null) => void): void;
}

export interface SpawnSpec {
  cmd: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  user: SandboxUser;
}

/**
 * argv for running `spec` as its user. When envd must change identity it execs through envd-exec, which sets the
 * user's supplementary groups as well; `nodeIds` is the fallback when the helper is not installed.
 */
export function identityArgv(spec: SpawnSpec): { file: string; args: string[]; nodeIds?: { uid: number; gid: number } } {
  const { user } = spec;
  const same = process.getuid?.() === user.uid && process.getgid?.() === user.gid;
  if (same) return { file: spec.cmd, args: spec.args };
  const helper = execHelperPath();
  if (!helper) return { file: spec.cmd, args: spec.args, nodeIds: { uid: user.uid, gid: user.gid } };
  return {
    file: helper,
    args: [String(user.uid), String(user.gid), user.groups.join(",") || String(user.gid), "--", spec.cmd, ...spec.args],
  };
}

/** Sends a signal to the process group (commands run as their own session), falling back to the pid alone. */
export function signalProcessTree(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
