/**
 * Stable error codes, the Connect/gRPC code set (1–16). The server maps them once, at its boundary, to HTTP.
 */
export enum Code {
  Canceled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
}

const codeNames: Record<Code, string> = {
  [Code.Canceled]: "canceled",
  [Code.Unknown]: "unknown",
  [Code.InvalidArgument]: "invalid_argument",
  [Code.DeadlineExceeded]: "deadline_exceeded",
  [Code.NotFound]: "not_found",
  [Code.AlreadyExists]: "already_exists",
  [Code.PermissionDenied]: "permission_denied",
  [Code.ResourceExhausted]: "resource_exhausted",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.Aborted]: "aborted",
  [Code.OutOfRange]: "out_of_range",
  [Code.Unimplemented]: "unimplemented",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "unavailable",
  [Code.DataLoss]: "data_loss",
  [Code.Unauthenticated]: "unauthenticated",
};

export function codeName(code: Code): string {
  return codeNames[code] ?? "unknown";
}

const brand = Symbol.for("burrow.BusError");

/** The one error type of the bus. `reason` is a finer, stable machine string (e.g. "replayed", "hop_limit"). */
export class BusError extends Error {
  readonly code: Code;
  readonly rawMessage: string;
  readonly reason: string | undefined;
  readonly [brand] = true;

  constructor(code: Code, message: string, init: { reason?: string; cause?: unknown } = {}) {
    super(`[${codeName(code)}] ${message}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "BusError";
    this.code = code;
    this.rawMessage = message;
    this.reason = init.reason;
  }

  // Shape check instead of prototype identity, so two copies of the package still recognise each other.
  static override [Symbol.hasInstance](v: unknown): boolean {
    return typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[brand] === true;
  }

  /** Normalise anything thrown into a BusError; aborts become Canceled, timeouts DeadlineExceeded. */
  static from(reason: unknown, fallback: Code = Code.Unknown): BusError {
    if (reason instanceof BusError) return reason;
    if (reason instanceof Error) {
      if (reason.name === "AbortError") return new BusError(Code.Canceled, reason.message, { cause: reason });
      if (reason.name === "TimeoutError") return new BusError(Code.DeadlineExceeded, reason.message, { cause: reason });
      return new BusError(fallback, reason.message, { cause: reason });
    }
    return new BusError(fallback, String(reason), { cause: reason });
  }
}

/** The error an aborted call rejects with: the signal's reason when it is already a BusError. */
export function abortError(signal: AbortSignal): BusError {
  return BusError.from(signal.reason ?? new DOMException("aborted", "AbortError"), Code.Canceled);
}
