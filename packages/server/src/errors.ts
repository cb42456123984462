// Errors of the control plane carry a Connect code; the HTTP boundary maps them once to E2B's error shape
// `{"code": <http status>, "message": "…"}` (e2b-compat.md §2: the SDK branches on the body's numeric code).
import { Code } from "@connectrpc/connect";

export { Code };

/** An expected failure with a stable code. Anything that is not a ServerError is an internal error. */
export class ServerError extends Error {
  override readonly name = "ServerError";
  readonly code: Code;
  /**
   * An HTTP status other than the code's usual one, where E2B's answer is more specific than Connect's code set:
   * 507 (insufficient storage) is a `resource_exhausted` that waiting will not cure, unlike 429.
   */
  readonly httpStatus: number | undefined;

  constructor(code: Code, message: string, options?: { cause?: unknown; httpStatus?: number }) {
    super(message, options);
    this.code = code;
    this.httpStatus = options?.httpStatus;
  }

  /** Duck-typed so that copies of this module (tests, bundles) still recognise each other's errors. */
  static is(value: unknown): value is ServerError {
    return value instanceof Error && value.name === "ServerError" && typeof (value as ServerError).code === "number";
  }
}

const HTTP_STATUS: Record<Code, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export function httpStatusOf(code: Code): number {
  return HTTP_STATUS[code] ?? 500;
}

/** E2B's REST error body. */
export interface E2bErrorBody {
  code: number;
  message: string;
}

/**
 * Turn anything thrown inside a route into a status and an E2B error body. Fastify's own errors (bad JSON,
 * body too large, schema validation) carry a 4xx `statusCode` and a safe message; everything else unexpected
 * becomes a 500 whose message does not leak internals.
 */
export function toE2bError(err: unknown): { status: number; body: E2bErrorBody; unhandled: boolean } {
  if (ServerError.is(err)) {
    const status = err.httpStatus ?? httpStatusOf(err.code);
    return { status, body: { code: status, message: err.message }, unhandled: false };
  }
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  if (typeof statusCode === "number" && statusCode >= 400 && statusCode < 500) {
    const message = err instanceof Error ? err.message : "bad request";
    return { status: statusCode, body: { code: statusCode, message }, unhandled: false };
  }
  return { status: 500, body: { code: 500, message: "internal server error" }, unhandled: true };
}

/** Connect code names as they appear on the wire (`not_found`), to codes. */
const CODE_BY_NAME: ReadonlyMap<string, Code> = new Map(
  Object.entries(Code)
    .filter((entry): entry is [string, Code] => typeof entry[1] === "number")
    .map(([name, code]) => [name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase(), code]),
);

/**
 * Normalise an error from a dependency (the orchestrator reports Connect code *names*, e.g. `"not_found"`) into a
 * ServerError, by structure rather than message text. Aborts become `canceled`; anything else stays as is.
 */
export function fromDependencyError(err: unknown): unknown {
  if (ServerError.is(err)) return err;
  if (err instanceof Error) {
    if (err.name === "AbortError") return new ServerError(Code.Canceled, "request canceled", { cause: err });
    if (err.name === "TimeoutError") return new ServerError(Code.DeadlineExceeded, err.message, { cause: err });
    const name = (err as { code?: unknown }).code;
    const code = typeof name === "string" ? CODE_BY_NAME.get(name) : undefined;
    if (code !== undefined) return new ServerError(code, err.message, { cause: err });
  }
  return err;
}
