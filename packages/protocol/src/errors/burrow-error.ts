// The one error type of Burrow, modelled on connect-es's ConnectError: a code from Connect's closed set says what
// kind of failure it is (and so how every boundary reports it: an HTTP status, a Connect error, a CLI exit), a
// stable snake_case reason says which failure it is in the domain (`sandbox_not_found`, `snapshot_storage`).
// Callers branch on `code` and `reason`, never on the message.
import { Code } from "@connectrpc/connect";
import { codeName } from "./code-name.js";
import { codeFromAbort, codeFromNodeError } from "./node-error.js";

/** Marks BurrowErrors, so that two copies of this module (bundles, tests) recognise each other's errors. */
const brand = Symbol.for("burrow.BurrowError");

export interface BurrowErrorInit {
  /** Which failure this is, in snake_case, stable across releases. @default the code's name, e.g. "not_found" */
  reason?: string | undefined;
  /** Structured facts about the failure for programs and logs (a limit, a step); never shown on the wire. */
  details?: Readonly<Record<string, unknown>> | undefined;
  /** The error this one reports; kept for logs, never sent to clients. */
  cause?: unknown;
}

/**
 * An expected failure with a stable code. Unlike ConnectError the message is not prefixed with the code: it is the
 * human sentence that boundaries send on the wire as it is (E2B's `{code, message}` bodies carry the code apart),
 * and logs carry `code` and `reason` as fields of their own.
 */
export class BurrowError extends Error {
  override name = "BurrowError";
  readonly code: Code;
  readonly reason: string;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: Code, message: string, init: BurrowErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.reason = init.reason ?? codeName(code);
    this.details = init.details;
  }

  /**
   * `x instanceof BurrowError` holds for BurrowErrors of any copy of this module. Subclasses keep ordinary
   * prototype identity, so `x instanceof TemplateBuildError` still means that class.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== BurrowError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === "object" && value !== null && (value as { [brand]?: unknown })[brand] === true;
  }

  /**
   * Anything thrown, as a BurrowError: a BurrowError as it is; an AbortError as Canceled and a TimeoutError as
   * DeadlineExceeded; a ConnectError with its code; a Node system error (also as the cause of another error) by
   * its errno (ECONNREFUSED → Unavailable, ENOENT → NotFound, …); anything else with `fallback`.
   */
  static from(value: unknown, fallback: Code = Code.Unknown): BurrowError {
    if (value instanceof BurrowError) return value;
    const abort = codeFromAbort(value);
    if (abort !== undefined) return new BurrowError(abort, messageOf(value), { cause: value });
    const node = codeFromNodeError(value);
    if (isConnectError(value)) {
      // connect-node reports a connection that broke under a call as Aborted (or Internal); what broke is in its
      // cause, and a broken connection is Unavailable here: Aborted means a conflict between concurrent changes.
      const generic = value.code === Code.Aborted || value.code === Code.Internal || value.code === Code.Unknown;
      const code = generic && node ? node.code : value.code;
      return new BurrowError(code, value.rawMessage, { cause: value });
    }
    if (node) return new BurrowError(node.code, messageOf(value), { cause: value });
    return new BurrowError(fallback, messageOf(value), { cause: value });
  }
}

Object.defineProperty(BurrowError.prototype, brand, { value: true });

/**
 * By shape, as ConnectError recognises itself: importing the class would load protobuf's runtime with it, and this
 * module is on envd's start-up path.
 */
function isConnectError(value: unknown): value is Error & { code: Code; rawMessage: string } {
  const v = value as { name?: unknown; code?: unknown; rawMessage?: unknown } | null;
  return value instanceof Error && v?.name === "ConnectError" && typeof v.code === "number" && typeof v.rawMessage === "string";
}

function messageOf(value: unknown): string {
  if (typeof value === "object" && value !== null && typeof (value as { message?: unknown }).message === "string") {
    return (value as { message: string }).message;
  }
  return String(value);
}
