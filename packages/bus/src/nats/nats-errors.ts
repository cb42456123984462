import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { BurrowError, Code } from "@burrow/protocol";
import { REVISION_CONFLICT } from "../errors.js";

/** JetStream API error codes the bus reacts to (from the server's errors.json). */
export const JS_ERR = {
  wrongLastSequence: 10071,
  streamNotFound: 10059,
  consumerNotFound: 10014,
  streamNameInUse: 10058,
  consumerNameExists: 10148,
  subjectsOverlap: 10065,
  noMessageFound: 10037,
  msgDeleteFailed: 10057,
} as const;

/** Maps nats.js errors to BurrowError by class and API code, never by message text. */
export function fromNatsError(e: unknown, ctx: string): BurrowError {
  if (e instanceof BurrowError) return e;
  if (e instanceof RequestError) {
    if (e.isNoResponders()) return new BurrowError(Code.Unavailable, `${ctx}: no responders`, { cause: e });
    if (e.cause instanceof TimeoutError) return new BurrowError(Code.DeadlineExceeded, `${ctx}: timed out`, { cause: e });
  }
  if (e instanceof NoRespondersError) return new BurrowError(Code.Unavailable, `${ctx}: no responders`, { cause: e });
  if (e instanceof TimeoutError) return new BurrowError(Code.DeadlineExceeded, `${ctx}: timed out`, { cause: e });
  if (e instanceof JetStreamApiError) {
    const msg = `${ctx}: ${e.message}`;
    switch (e.code) {
      case JS_ERR.streamNotFound:
      case JS_ERR.consumerNotFound:
        return new BurrowError(Code.NotFound, msg, { cause: e });
      case JS_ERR.wrongLastSequence:
        return new BurrowError(Code.Aborted, msg, { cause: e, reason: REVISION_CONFLICT });
      case JS_ERR.subjectsOverlap:
        return new BurrowError(Code.InvalidArgument, msg, { cause: e });
    }
    switch (e.status) {
      case 400: return new BurrowError(Code.InvalidArgument, msg, { cause: e });
      case 404: return new BurrowError(Code.NotFound, msg, { cause: e });
      case 409: return new BurrowError(Code.FailedPrecondition, msg, { cause: e });
      case 503: return new BurrowError(Code.Unavailable, msg, { cause: e });
    }
    return new BurrowError(Code.Internal, msg, { cause: e });
  }
  if (e instanceof Error && e.name === "JetStreamNotEnabled") return new BurrowError(Code.NotFound, `${ctx}: no stream stores this subject`, { cause: e });
  if (e instanceof Error && (e.name === "ClosedConnectionError" || e.name === "ConnectionError")) {
    return new BurrowError(Code.Unavailable, `${ctx}: ${e.message}`, { cause: e });
  }
  return BurrowError.from(e, Code.Internal);
}
