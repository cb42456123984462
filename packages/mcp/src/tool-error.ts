// Tool failures as an agent sees them: one line, `<code>: <message>`, with codes from Connect's set (the codes the
// rest of Burrow uses). The official SDK's errors and the Burrow SDK's BurrowApiError map here, once. They are told
// apart by name, not instanceof: a process may load the SDK more than once (ESM and CommonJS copies, test runners).
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

/** The official SDK's error classes (e2b) by their `name`. */
const BY_NAME: Record<string, ToolErrorCode> = {
  NotFoundError: "not_found",
  SandboxNotFoundError: "not_found",
  FileNotFoundError: "not_found",
  InvalidArgumentError: "invalid_argument",
  AuthenticationError: "unauthenticated",
  TimeoutError: "deadline_exceeded",
  AbortError: "deadline_exceeded",
  RateLimitError: "resource_exhausted",
  NotEnoughSpaceError: "resource_exhausted",
  ServiceBusyError: "unavailable",
  CommandExitError: "failed_precondition",
};

export function toToolError(error: unknown): ToolError {
  if (error instanceof ToolError) return error;
  if (!(error instanceof Error)) return new ToolError("internal", String(error));
  const message = error.message;
  const as = (code: ToolErrorCode) => new ToolError(code, message, { cause: error });
  const status = (error as { status?: unknown }).status;
  if (error.name === "BurrowApiError" && typeof status === "number") return as(fromStatus(status));
  const known = BY_NAME[error.name];
  if (known) return as(known);
  // The SDK reports other API failures as SandboxError or TemplateError with the status first ("404: …").
  const leading = /^(\d{3}):/.exec(message)?.[1];
  if (leading) return as(fromStatus(Number(leading)));
  if (error.name === "SandboxError" || error.name === "TemplateError") return as("failed_precondition");
  if (error instanceof TypeError && /fetch failed/.test(message)) return as("unavailable");
  return as("internal");
}

/** Whether an error is the SDK's CommandExitError (a command that ran and exited non-zero). */
export function isCommandExit(error: unknown): error is Error & { exitCode: number; stdout: string; stderr: string; error?: string } {
  return error instanceof Error && error.name === "CommandExitError" && typeof (error as { exitCode?: unknown }).exitCode === "number";
}

export function describeToolError(error: unknown): string {
  const e = toToolError(error);
  return `${e.code}: ${e.message}`;
}
