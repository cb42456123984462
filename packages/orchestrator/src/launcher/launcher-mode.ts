// The launcher's modes that act on a running sandbox (--attach-volumes, --swap-root) run through burrow-reaper like a
// launch and answer one JSON line: their own success shape or the launcher's {"error","step"}.
import { BurrowError, Code } from "@burrow/protocol";
import { runThroughReaper, type ReaperPaths } from "../reaper/reaper.js";

/** The running sandbox a mode acts on, as its record names it. */
export interface RunningSandboxTarget {
  reaper: ReaperPaths;
  /** Host pid of the sandbox init, whose namespaces and root are entered. */
  pid: number;
  /** Field 22 of the init's /proc/<pid>/stat at launch (its record's pidStartTime): a reused pid is refused. */
  pidStartTime: string;
  /** Canonical host uid of sandbox root on disk (--uid-base) and the size of the range. */
  uidBase: number;
  uidCount: number;
  /** Host uid of root in this sandbox (its record's hostUidBase): its own range, or uidBase. */
  hostUidBase: number;
}

/** The mode's arguments that name the sandbox: `--<mode> PID --start-time … --host-base …`. */
export function targetArgs(mode: "attach-volumes" | "swap-root", o: RunningSandboxTarget): string[] {
  return [`--${mode}`, String(o.pid), "--start-time", o.pidStartTime, "--uid-base", String(o.uidBase), "--uid-count", String(o.uidCount), "--host-base", String(o.hostUidBase)];
}

export interface LauncherModeAnswer {
  [field: string]: unknown;
  error?: unknown;
  step?: unknown;
}

/**
 * Runs the mode and resolves when `succeeded` accepts its answer; otherwise rejects with `reason`, saying which step
 * failed. A canceled run rejects with Canceled (reason launch_canceled).
 */
export async function runLauncherMode(
  reaper: ReaperPaths,
  args: string[],
  o: { what: string; reason: string; succeeded: (answer: LauncherModeAnswer) => boolean; signal?: AbortSignal | undefined },
): Promise<void> {
  const output = await runThroughReaper(reaper, args, o.signal);
  if (o.signal?.aborted) throw new BurrowError(Code.Canceled, `${o.what} canceled`, { reason: "launch_canceled", cause: o.signal.reason });
  const line = output.trim().split("\n").pop() ?? "";
  let answer: LauncherModeAnswer | undefined;
  try {
    answer = JSON.parse(line) as LauncherModeAnswer;
  } catch {
    answer = undefined;
  }
  if (answer && o.succeeded(answer)) return;
  const why = answer && typeof answer.error === "string" ? `${String(answer.step)}: ${answer.error}` : JSON.stringify(output);
  throw new BurrowError(Code.Internal, `${o.what} failed: ${why}`, { reason: o.reason });
}
