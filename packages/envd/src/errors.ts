import { BurrowError, codeFromNodeError, errnoOf } from "@burrow/protocol/errors";
import { Code, ConnectError } from "@connectrpc/connect";

/** Maps a Node system error to a ConnectError in one place; the message names the operation and path. */
export function connectErrorFromFs(err: unknown, what: string): ConnectError {
  if (err instanceof ConnectError) return err;
  const errno = errnoOf(err);
  const code = codeFromNodeError(err)?.code ?? Code.Internal;
  const detail = code === Code.NotFound ? "does not exist" : errno ? errno.toLowerCase() : "failed";
  return new ConnectError(`${what}: ${detail}`, code, undefined, undefined, err);
}

/** A BurrowError (an unknown user, a bad path) as the ConnectError an RPC answers with, its code kept. */
export function connectErrorFrom(err: unknown): unknown {
  return err instanceof BurrowError ? new ConnectError(err.message, err.code, undefined, undefined, err) : err;
}
