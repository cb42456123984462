/** Stable codes for launch failures; callers branch on `code` (and `step`), never on the message. */
export type LaunchErrorCode =
  | "invalid_argument" // the launcher rejected its command line
  | "setup_failed" // a namespace, mount, cgroup, seccomp… step failed; `step` says which
  | "exec_failed" // the sandbox command could not be exec'd inside the sandbox
  | "binary_missing" // burrow-sandbox is not built (see buildNative), so the reaper cannot run it
  | "reaper_unavailable" // burrow-reaper is not answering, or refused the request
  | "bad_output" // the launcher printed something that is not its JSON contract
  | "build_failed" // gcc/libseccomp build of the launcher failed
  | "aborted";

export class LaunchError extends Error {
  override readonly name = "LaunchError";
  readonly code: LaunchErrorCode;
  /** The launcher step that failed (`overlay`, `pivot_root`, `exec`, …) when it reported one. */
  readonly step: string | undefined;

  constructor(code: LaunchErrorCode, message: string, options?: { step?: string; cause?: unknown }) {
    super(`[${code}] ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.step = options?.step;
  }
}
