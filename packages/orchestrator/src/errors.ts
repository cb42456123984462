// Transitional: orchestrator errors are BurrowErrors (Code plus reason). This class only keeps the code names of
// callers not converted yet compiling, and goes with the last of them.
import { BurrowError, Code } from "@burrow/protocol";

/** @deprecated Use BurrowError with a Code. */
export type OrchestratorErrorCode =
  | "not_found"
  | "invalid_argument"
  | "resource_exhausted"
  | "unavailable"
  | "deadline_exceeded"
  | "failed_precondition"
  | "internal"
  | "canceled";

const CODES: Record<OrchestratorErrorCode, Code> = {
  not_found: Code.NotFound,
  invalid_argument: Code.InvalidArgument,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
  failed_precondition: Code.FailedPrecondition,
  internal: Code.Internal,
  canceled: Code.Canceled,
};

/** @deprecated Use BurrowError with a Code. */
export class OrchestratorError extends BurrowError {
  constructor(code: OrchestratorErrorCode, message: string, options?: { cause?: unknown }) {
    super(CODES[code], message, options);
  }
}
