/** Stable codes for cgroup failures; callers branch on `code`, never on the message. */
export type CgroupErrorCode =
  | "invalid_argument" // bad instance or sandbox id, or impossible limits
  | "unsupported_layout" // no usable cgroup hierarchy (e.g. v1 without a memory controller)
  | "failed_precondition" // pure v2: our cgroup has processes, so controllers cannot be delegated
  | "timeout" // the kernel did not reach the state we waited for (frozen, empty, removable)
  | "io" // reading or writing a cgroup file failed
  | "aborted";

export class CgroupError extends Error {
  override readonly name = "CgroupError";
  readonly code: CgroupErrorCode;

  constructor(code: CgroupErrorCode, message: string, options?: { cause?: unknown }) {
    super(`[${code}] ${message}`, options);
    this.code = code;
  }
}
