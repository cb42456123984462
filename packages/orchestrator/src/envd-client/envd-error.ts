// The one error type of the envd client. Its code is a Connect code name (`not_found`, `deadline_exceeded`, …),
// like OrchestratorError's, so the server maps it to an HTTP status where it maps every dependency's error.
import { ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";

export type EnvdErrorCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

export class EnvdError extends Error {
  override readonly name = "EnvdError";
  constructor(
    readonly code: EnvdErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Duck-typed so that copies of this module (bundles, tests) recognise each other's errors. */
  static is(value: unknown): value is EnvdError {
    return value instanceof Error && value.name === "EnvdError" && typeof (value as EnvdError).code === "string";
  }
}

/**
 * Anything a call to envd threw, as an EnvdError prefixed with what was being done. Connect errors keep their code;
 * aborts become `canceled`, network failures `unavailable` (Connect's own mapping of Node's errors).
 */
export function envdErrorFrom(error: unknown, what: string): EnvdError {
  if (EnvdError.is(error)) return error;
  const connectError = ConnectError.from(error);
  return new EnvdError(codeToString(connectError.code) as EnvdErrorCode, `${what}: ${connectError.rawMessage}`, {
    cause: error,
  });
}
