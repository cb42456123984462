// Errors of the execution server are BurrowErrors; the HTTP layer maps their codes to statuses in one place
// (http/respond.ts). Bodies are plain text, as the E2B SDKs expect from this port.
import { BurrowError, Code } from "@burrow/protocol/errors";

/** How a kernel process ended, as far as the server could tell. */
export interface KernelExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The sandbox's out-of-memory killer fired while the kernel ran (cgroup memory.events). */
  oomKilled: boolean;
  /** The server itself ended it (restart, removal, shutdown). */
  byServer: boolean;
  /** Last lines the process wrote to its own stdout/stderr (not user output), for diagnosis. */
  output: string;
}

/** A kernel process that ended while it had work: the run it was doing fails with this (Unavailable, kernel_exited). */
export class KernelExitedError extends BurrowError {
  override name = "KernelExitedError";
  constructor(
    readonly language: string,
    readonly exit: KernelExit,
  ) {
    super(Code.Unavailable, describeKernelExit(language, exit), { reason: "kernel_exited" });
  }
}

export function describeKernelExit(language: string, exit: KernelExit): string {
  if (exit.byServer) return `the ${language} kernel was stopped by the server`;
  if (exit.oomKilled) return `the ${language} kernel was killed by the out-of-memory killer (the sandbox ran out of memory)`;
  if (exit.signal === "SIGKILL") return `the ${language} kernel was killed by SIGKILL (most likely the out-of-memory killer)`;
  if (exit.signal) return `the ${language} kernel was killed by ${exit.signal}`;
  return `the ${language} kernel exited with code ${exit.code ?? "unknown"}`;
}
