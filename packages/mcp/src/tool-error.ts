// Tool failures as an agent sees them: one line, `<code>: <message>`, with codes from Connect's set (the codes the
// rest of Burrow uses). The official SDK's error classes and the Burrow SDK's BurrowApiError map here, once.
import { BurrowApiError } from "@burrow/sdk";
import {
  AuthenticationError,
  CommandExitError,
  InvalidArgumentError,
  NotEnoughSpaceError,
  NotFoundError,
  RateLimitError,
  SandboxError,
  TimeoutError,
} from "e2b";

export type ToolErrorCode =
  | "invalid_argument"
  | "not_found"
  | "unauthenticated"
  | "permission_denied"
  | "deadline_exceeded"
  | "resource_exhausted"
  | "failed_precondition"
  | "unavailable"
  | "internal";

/** A failure a tool reports on purpose, with its code. */
export class ToolError extends Error {
  override readonly name = "ToolError";
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

function fromStatus(status: number): ToolErrorCode {
  if (status === 400 || status === 422) return "invalid_argument";
  if (status === 401) return "unauthenticated";
  if (status === 403) return "permission_denied";
  if (status === 404) return "not_found";
  if (status === 409) return "failed_precondition";
  if (status === 429 || status === 507) return "resource_exhausted";
  if (status === 502 || status === 503) return "unavailable";
  if (status === 504) return "deadline_exceeded";
  return "internal";
}

export function toToolError(error: unknown): ToolError {
  if (error instanceof ToolError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const as = (code: ToolErrorCode) => new ToolError(code, message, { cause: error });
  if (error instanceof BurrowApiError) return as(fromStatus(error.status));
  if (error instanceof NotFoundError) return as("not_found");
  if (error instanceof InvalidArgumentError) return as("invalid_argument");
  if (error instanceof AuthenticationError) return as("unauthenticated");
  if (error instanceof TimeoutError) return as("deadline_exceeded");
  if (error instanceof RateLimitError || error instanceof NotEnoughSpaceError) return as("resource_exhausted");
  if (error instanceof CommandExitError) return as("failed_precondition");
  if (error instanceof SandboxError) {
    // The SDK reports most API failures as SandboxError with the status in the text ("404: …").
    const status = /^(\d{3}):/.exec(message)?.[1];
    return as(status ? fromStatus(Number(status)) : "failed_precondition");
  }
  if (error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError")) return as("deadline_exceeded");
  if (error instanceof TypeError && /fetch failed/.test(message)) return as("unavailable");
  return as("internal");
}

export function describeToolError(error: unknown): string {
  const e = toToolError(error);
  return `${e.code}: ${e.message}`;
}
