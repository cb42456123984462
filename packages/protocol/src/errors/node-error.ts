// Node's system errors and the platform's cancellation errors, to codes, in one place. A failure often arrives
// wrapped (a fetch TypeError whose cause is ECONNREFUSED, a ConnectError around ECONNRESET), so the cause chain
// is walked.
import { Code } from "@connectrpc/connect";

/**
 * What an errno says about the operation that failed. Whether that is the caller's fault (a path it named) or an
 * internal failure (a path of ours) is for the boundary that reports it to decide.
 */
const CODE_BY_ERRNO: Readonly<Record<string, Code>> = {
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
  // The peer is not there or went away: trying again later may work.
  ECONNREFUSED: Code.Unavailable,
  ECONNRESET: Code.Unavailable,
  EPIPE: Code.Unavailable,
  ETIMEDOUT: Code.Unavailable,
  EHOSTUNREACH: Code.Unavailable,
  ENETUNREACH: Code.Unavailable,
  ENOTFOUND: Code.Unavailable,
  EAI_AGAIN: Code.Unavailable,
  UND_ERR_SOCKET: Code.Unavailable,
  UND_ERR_CONNECT_TIMEOUT: Code.Unavailable,
  // An HTTP/2 stream or socket destroyed under a call: connect-node reports these as Aborted.
  ERR_STREAM_DESTROYED: Code.Unavailable,
  ERR_HTTP2_INVALID_STREAM: Code.Unavailable,
};

/** Linux's EDQUOT, which libuv has no name for: Node reports it as "Unknown system error -122". */
const EDQUOT_ERRNO = -122;

/** The errors of `value` and its causes, outermost first (a cycle ends the walk). */
export function causeChain(value: unknown): object[] {
  const chain: object[] = [];
  for (let v = value; typeof v === "object" && v !== null && !chain.includes(v); v = (v as { cause?: unknown }).cause) {
    chain.push(v);
  }
  return chain;
}

/** The Node error code (`ENOENT`, `ECONNRESET`, …) of a system error; EDQUOT is recognised by its number. */
export function errnoOf(value: unknown): string | undefined {
  const { code, errno } = (value as { code?: unknown; errno?: unknown } | null) ?? {};
  if (errno === EDQUOT_ERRNO) return "EDQUOT";
  return typeof code === "string" ? code : undefined;
}

/** The code of the first system error in the cause chain that has one, and that error's errno. */
export function codeFromNodeError(value: unknown): { code: Code; errno: string } | undefined {
  for (const link of causeChain(value)) {
    const errno = errnoOf(link);
    const code = errno === undefined ? undefined : CODE_BY_ERRNO[errno];
    if (code !== undefined && errno !== undefined) return { code, errno };
  }
  return undefined;
}

/**
 * Canceled for an AbortError (a caller gave up), DeadlineExceeded for a TimeoutError (`AbortSignal.timeout`);
 * undefined for anything else. By name, because DOMException may come from another realm.
 */
export function codeFromAbort(value: unknown): Code | undefined {
  const name = (value as { name?: unknown } | null)?.name;
  if (name === "AbortError") return Code.Canceled;
  if (name === "TimeoutError") return Code.DeadlineExceeded;
  return undefined;
}
