// Why an exchange with a sandbox broke off before the sandbox began to answer, in the terms the gateway acts on:
// whether trying again on a fresh connection is safe and useful, and what to tell the client when it is not.

/**
 * - `refused`: nothing listens on the port (ECONNREFUSED);
 * - `closed`: the connection was reset or closed before the answer began (ECONNRESET, EPIPE, "socket hang up");
 * - `timeout`: connecting took longer than the gateway waits, or the kernel gave up (ETIMEDOUT);
 * - `unreachable`: no route to the sandbox's address (EHOSTUNREACH, ENETUNREACH, EHOSTDOWN);
 * - `local`: the gateway's own host ran short (EMFILE, ENFILE, EADDRNOTAVAIL, ENOBUFS, ENOMEM);
 * - `other`: anything else.
 */
export type UpstreamFailureKind = "refused" | "closed" | "timeout" | "unreachable" | "local" | "other";

/** One failed attempt, as logged: what broke, and what the connection had done before it broke. */
export interface UpstreamFailure {
  kind: UpstreamFailureKind;
  /** The errno-style code (ECONNRESET…), or the error's message when it has none. */
  code: string;
  message: string;
  /** The attempt went out on a kept-alive connection that had served earlier exchanges. */
  reused: boolean;
  /** The TCP connection had been established (so the request may have been sent). */
  connected: boolean;
  /** Bytes of an answer had arrived on this exchange (a broken head): the sandbox did answer, badly. */
  answered: boolean;
}

/** Raised by the gateway itself when a connection to a sandbox is not established within its connect timeout. */
export const CONNECT_TIMEOUT_CODE = "ETIMEDOUT";

const KINDS: Record<string, UpstreamFailureKind> = {
  ECONNREFUSED: "refused",
  ECONNRESET: "closed",
  EPIPE: "closed",
  ECONNABORTED: "closed",
  ETIMEDOUT: "timeout",
  EHOSTUNREACH: "unreachable",
  ENETUNREACH: "unreachable",
  EHOSTDOWN: "unreachable",
  ENETDOWN: "unreachable",
  EMFILE: "local",
  ENFILE: "local",
  EADDRNOTAVAIL: "local",
  EADDRINUSE: "local",
  ENOBUFS: "local",
  ENOMEM: "local",
};

export function upstreamFailure(err: unknown, attempt: { reused: boolean; connected: boolean; answered: boolean }): UpstreamFailure {
  const error = err as { code?: unknown; message?: unknown } | null;
  const code = typeof error?.code === "string" ? error.code : "";
  const message = typeof error?.message === "string" ? error.message : String(err);
  return { kind: KINDS[code] ?? "other", code: code || message, message, ...attempt };
}

const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]);

/**
 * Whether to send the request again on a fresh connection, given that no byte of an answer arrived and the whole
 * request body is at hand. A request that may have reached the sandbox is resent only when repeating it is
 * harmless (an idempotent method) or when it went out on a reused connection that the sandbox closed as idle: a
 * server closes only connections with no request in flight, so it never saw this one. Connection attempts that
 * failed before any byte was sent (refused, timed out) are always safe to repeat, but only a refusal is worth
 * repeating at once; a timeout would just double the wait.
 */
export function worthRetrying(failure: UpstreamFailure, method: string | undefined): boolean {
  if (failure.answered) return false;
  switch (failure.kind) {
    case "refused":
      return true;
    case "closed":
    case "other":
      return failure.reused || !failure.connected || IDEMPOTENT.has((method ?? "GET").toUpperCase());
    default:
      return false;
  }
}

/**
 * Whether the client should be told to try again (503, Connect `resource_exhausted`) rather than be given the
 * sandbox's own failure (502): the port was open and the sandbox did not misbehave, the gateway just could not get
 * the exchange through in time or at all (a slow connect, a kept-alive connection that closed as the request went
 * out, no route at this moment, the gateway short of file descriptors).
 */
export function isTransient(failure: UpstreamFailure): boolean {
  switch (failure.kind) {
    case "timeout":
    case "unreachable":
    case "local":
      return true;
    case "closed":
    case "other":
      return failure.reused && !failure.answered;
    default:
      return false;
  }
}
