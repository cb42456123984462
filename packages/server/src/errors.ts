// The HTTP boundary of the control plane. Every expected failure, of the server or of a dependency (orchestrator,
// template builder, bus, envd client), is a BurrowError with a Connect code; here, and only here, it becomes E2B's
// error shape `{"code": <http status>, "message": "…"}` (the SDK branches on the body's numeric code).
import { BurrowError, Code, codeFromAbort, httpStatusFromCode } from "@burrow/protocol";

/**
 * Reasons whose status is more specific than their code's, as E2B answers them: 507 (insufficient storage) is a
 * ResourceExhausted that waiting will not cure, unlike 429 — the host is short of memory or disk, or the owner's
 * snapshots fill their quota (only deleting some helps).
 */
const HTTP_STATUS_BY_REASON: Readonly<Record<string, number>> = {
  host_memory: 507,
  host_disk: 507,
  snapshot_storage: 507,
  // Conflicts with the state of a checkpoint tree or a sandbox: 409 like a pause of a paused sandbox.
  checkpoint_has_dependants: 409,
  sandbox_paused: 409,
  // A volume mounted by a sandbox cannot be deleted; a full volume is out of space, not rate-limited.
  volume_in_use: 409,
  volume_full: 507,
};

/** The HTTP status E2B's API answers for an error: its code's (Connect's table), or its reason's. */
export function httpStatusOf(error: BurrowError): number {
  return HTTP_STATUS_BY_REASON[error.reason] ?? httpStatusFromCode(error.code);
}

/** E2B's REST error body. */
export interface E2bErrorBody {
  code: number;
  message: string;
}

/**
 * Turn anything thrown inside a route into a status and an E2B error body. A BurrowError answers with its status and
 * message; an abort or timeout of the request's own signal is Canceled or DeadlineExceeded. Fastify's own errors
 * (bad JSON, body too large, schema validation) carry a 4xx `statusCode` and a safe message. Everything else is
 * unexpected: a 500 whose message does not leak internals (a Node error's message names host paths).
 */
export function toE2bError(err: unknown): { status: number; body: E2bErrorBody; unhandled: boolean } {
  const known = expectedError(err);
  if (known) {
    const status = httpStatusOf(known);
    return { status, body: { code: status, message: known.message }, unhandled: false };
  }
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  if (typeof statusCode === "number" && statusCode >= 400 && statusCode < 500) {
    const message = err instanceof Error ? err.message : "bad request";
    return { status: statusCode, body: { code: statusCode, message }, unhandled: false };
  }
  return { status: 500, body: { code: 500, message: "internal server error" }, unhandled: true };
}

function expectedError(err: unknown): BurrowError | undefined {
  if (err instanceof BurrowError) return err;
  const abort = codeFromAbort(err);
  if (abort === Code.Canceled) return new BurrowError(abort, "request canceled", { cause: err });
  if (abort !== undefined) return BurrowError.from(err);
  return undefined;
}
