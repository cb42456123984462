// Typed orchestrator errors. Codes are Connect's code names so the server maps them to HTTP once.
export type OrchestratorErrorCode =
  | "not_found"
  | "invalid_argument"
  | "resource_exhausted"
  | "unavailable"
  | "deadline_exceeded"
  | "failed_precondition"
  | "internal"
  | "canceled";

export class OrchestratorError extends Error {
  override readonly name = "OrchestratorError";
  constructor(
    readonly code: OrchestratorErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
