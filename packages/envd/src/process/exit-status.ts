import { constants } from "node:os";

export interface ExitInfo {
  exitCode: number;
  exited: boolean;
  status: string;
  error?: string;
}

// Go's signal descriptions (syscall signal table, linux), which ProcessState.String() prints.
const GO_SIGNAL_NAMES: Record<number, string> = {
  1: "hangup", 2: "interrupt", 3: "quit", 4: "illegal instruction", 5: "trace/breakpoint trap", 6: "aborted",
  7: "bus error", 8: "floating point exception", 9: "killed", 10: "user defined signal 1",
  11: "segmentation fault", 12: "user defined signal 2", 13: "broken pipe", 14: "alarm clock", 15: "terminated",
  16: "stack fault", 17: "child exited", 18: "continued", 19: "stopped (signal)", 20: "stopped",
  21: "stopped (tty input)", 22: "stopped (tty output)", 23: "urgent I/O condition", 24: "CPU time limit exceeded",
  25: "file size limit exceeded", 26: "virtual timer expired", 27: "profiling timer expired", 28: "window changed",
  29: "I/O possible", 30: "power failure", 31: "bad system call",
};

export function signalNumber(signal: NodeJS.Signals | number): number {
  return typeof signal === "number" ? signal : (constants.signals[signal] ?? 0);
}

/**
 * The end event as upstream envd (Go) reports it: `exit status N` (error set when N≠0), or for a signal
 * exitCode -1, exited false and `signal: killed`.
 */
export function exitInfo(code: number | null, signal: NodeJS.Signals | number | null): ExitInfo {
  const signo = signal === null ? 0 : signalNumber(signal);
  if (signo > 0) {
    const status = `signal: ${GO_SIGNAL_NAMES[signo] ?? `signal ${signo}`}`;
    return { exitCode: -1, exited: false, status, error: status };
  }
  const exitCode = code ?? -1;
  const status = `exit status ${exitCode}`;
  return exitCode === 0 ? { exitCode, exited: true, status } : { exitCode, exited: true, status, error: status };
}
