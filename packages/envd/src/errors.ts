import { Code, ConnectError } from "@connectrpc/connect";

// Its own module, so that envd's start-up path (health, init) does not load Connect.
export { HttpError } from "./http/http-error.js";

const errnoCodes: Record<string, Code> = {
  ENOENT: Code.NotFound,
  EEXIST: Code.AlreadyExists,
  ENOTEMPTY: Code.AlreadyExists,
  EACCES: Code.PermissionDenied,
  EPERM: Code.PermissionDenied,
  EROFS: Code.PermissionDenied,
  ENOTDIR: Code.InvalidArgument,
  EISDIR: Code.InvalidArgument,
  EINVAL: Code.InvalidArgument,
  ENAMETOOLONG: Code.InvalidArgument,
  ELOOP: Code.InvalidArgument,
  ENOSPC: Code.ResourceExhausted,
  EDQUOT: Code.ResourceExhausted,
  EMFILE: Code.ResourceExhausted,
  ENFILE: Code.ResourceExhausted,
  ENOSYS: Code.Unimplemented,
  ENOTSUP: Code.Unimplemented,
};

/** Linux's EDQUOT. */
const EDQUOT_ERRNO = 122;

export function errnoOf(err: unknown): string | undefined {
  const { code, errno } = (err as { code?: unknown; errno?: unknown } | null) ?? {};
  // libuv has no name for EDQUOT (a sandbox over its disk quota): Node reports "Unknown system error -122".
  if (errno === -EDQUOT_ERRNO) return "EDQUOT";
  return typeof code === "string" ? code : undefined;
}

/** Maps a Node system error to a ConnectError in one place; the message names the operation and path. */
export function connectErrorFromFs(err: unknown, what: string): ConnectError {
  if (err instanceof ConnectError) return err;
  const errno = errnoOf(err);
  const code = (errno !== undefined ? errnoCodes[errno] : undefined) ?? Code.Internal;
  const detail = code === Code.NotFound ? "does not exist" : errno ? errno.toLowerCase() : "failed";
  return new ConnectError(`${what}: ${detail}`, code, undefined, undefined, err);
}
