// A pid alone cannot identify a sandbox across restarts: pids are reused. The pair
// (pid, start time in clock ticks since boot) is unique for the life of the machine.
import { readFileSync } from "node:fs";

interface ProcStat {
  state: string;
  startTime: string;
}

/** Fields 3 and 22 of /proc/<pid>/stat; undefined when the process does not exist. */
export function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // comm (field 2) may contain spaces and parentheses: split after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = rest[0];
  const startTime = rest[19];
  if (state === undefined || startTime === undefined) return undefined;
  return { state, startTime };
}

/** True while the sandbox init started at `startTime` still runs (a zombie counts as dead). */
export function isSandboxInitAlive(pid: number, startTime: string): boolean {
  const st = readProcStat(pid);
  return st !== undefined && st.startTime === startTime && st.state !== "Z" && st.state !== "X";
}
