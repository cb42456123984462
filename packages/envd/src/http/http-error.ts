// The plain-HTTP endpoints' errors are BurrowErrors; this maps them, once, to the status of E2B's envd answers
// (`{"code": <status>, "message"}`). A module of its own, small, so that envd's start-up path (health, init) loads
// neither Connect nor protobuf with it.
import { type BurrowError, httpStatusFromCode } from "@burrow/protocol/errors";

/** Reasons whose status is more specific than their code's, as E2B's envd answers them. */
const STATUS_BY_REASON: Readonly<Record<string, number>> = {
  body_too_large: 413,
  method_not_allowed: 405,
  disk_full: 507,
};

/** The status envd answers an error with. */
export function httpStatusOf(error: BurrowError): number {
  return STATUS_BY_REASON[error.reason] ?? httpStatusFromCode(error.code);
}
