// Typed build failures. `code` is a Connect code name (the server maps it to HTTP once); `step` is E2B's
// `reason.step`: "base", "finalize" or the 1-based step number as a string.
export type TemplateBuildErrorCode =
  | "invalid_argument"
  | "not_found"
  | "failed_precondition"
  | "permission_denied"
  | "already_exists"
  | "resource_exhausted"
  | "unimplemented"
  | "internal"
  | "canceled";

export class TemplateBuildError extends Error {
  override readonly name = "TemplateBuildError";
  constructor(
    readonly code: TemplateBuildErrorCode,
    message: string,
    options?: { step?: string | undefined; cause?: unknown },
  ) {
    super(message, options);
    this.step = options?.step;
  }
  readonly step: string | undefined;
}
