// Connect codes and the HTTP statuses of Burrow's and E2B's REST answers (`{"code": <status>, "message": "…"}`),
// the same pairs as the Connect protocol's own table. Servers map a code to a status at their boundary; clients map
// a status back to a code.
import { Code } from "@connectrpc/connect";

const STATUS_BY_CODE: Readonly<Record<Code, number>> = {
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

/** Statuses no code maps to that E2B answers: too large (413) and insufficient storage (507) are exhausted resources. */
const EXTRA_CODES: Readonly<Record<number, Code>> = { 413: Code.ResourceExhausted, 507: Code.ResourceExhausted };

/** The HTTP status of a code. */
export function httpStatusFromCode(code: Code): number {
  return STATUS_BY_CODE[code] ?? 500;
}

/**
 * The code an HTTP error status stands for: where several codes share a status, the first of them (400 is
 * InvalidArgument, 409 AlreadyExists, 500 Unknown); a status of no code is Unknown.
 */
export function codeFromHttpStatus(status: number): Code {
  const extra = EXTRA_CODES[status];
  if (extra !== undefined) return extra;
  for (const [code, codeStatus] of Object.entries(STATUS_BY_CODE)) {
    if (codeStatus === status) return Number(code) as Code;
  }
  return Code.Unknown;
}
