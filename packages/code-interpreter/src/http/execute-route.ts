// POST /execute: run code in a context and stream what it produces.
import type { IncomingMessage, ServerResponse } from "node:http";
import { BurrowError, Code } from "@burrow/protocol/errors";
import type { ContextRegistry } from "../contexts/context-registry.js";
import type { Logger } from "../log.js";
import type { AccessGuard } from "./access.js";
import { INVALID_JSON, readJsonBody } from "./body.js";
import { ExecutionResponse, type ExecutionResponseOptions } from "./execution-response.js";
import { sendValidationError } from "./respond.js";

/** Header a client may send to bound the run on the server (the body field `timeout_ms` does the same). */
export const TIMEOUT_HEADER = "x-execution-timeout-ms";

export interface ExecuteDeps {
  registry: ContextRegistry;
  access: AccessGuard;
  response: ExecutionResponseOptions;
  /** Server-wide bound for runs that name none (0 = no limit). */
  defaultTimeoutMs: number;
  logger: Logger;
}

interface ExecuteRequest {
  code: string;
  contextId: string | undefined;
  language: string | undefined;
  envVars: Record<string, string> | undefined;
  timeoutMs: number | undefined;
}

type Invalid = { field: string; msg: string; type: string };

function optionalString(body: Record<string, unknown>, field: string): string | undefined | Invalid {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") return { field, msg: "str type expected", type: "type_error.str" };
  return value;
}

function isInvalid(value: unknown): value is Invalid {
  return typeof value === "object" && value !== null && "msg" in value;
}

function timeoutValue(raw: unknown, field: string): number | undefined | Invalid {
  if (raw === undefined || raw === null || raw === "") return undefined;
  const value = typeof raw === "string" ? Number(raw.trim()) : raw;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    return { field, msg: "must be a non-negative number of milliseconds", type: "value_error" };
  }
  return Math.floor(value);
}

function parseRequest(body: unknown, headerTimeout: string | undefined): ExecuteRequest | Invalid {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { field: "", msg: "a JSON object is required", type: "type_error.dict" };
  const b = body as Record<string, unknown>;
  if (b.code === undefined || b.code === null) return { field: "code", msg: "field required", type: "value_error.missing" };
  if (typeof b.code !== "string") return { field: "code", msg: "str type expected", type: "type_error.str" };
  const contextId = optionalString(b, "context_id");
  if (isInvalid(contextId)) return contextId;
  const language = optionalString(b, "language");
  if (isInvalid(language)) return language;
  let envVars: Record<string, string> | undefined;
  if (b.env_vars !== undefined && b.env_vars !== null) {
    if (typeof b.env_vars !== "object" || Array.isArray(b.env_vars)) return { field: "env_vars", msg: "value is not a valid dict", type: "type_error.dict" };
    envVars = {};
    for (const [key, value] of Object.entries(b.env_vars as Record<string, unknown>)) {
      if (typeof value !== "string") return { field: "env_vars", msg: `value of '${key}' must be a string`, type: "type_error.str" };
      if (key === "" || key.includes("=") || key.includes("\0") || value.includes("\0")) {
        return { field: "env_vars", msg: `'${key}' is not a valid environment variable`, type: "value_error" };
      }
      envVars[key] = value;
    }
  }
  const bodyTimeout = timeoutValue(b.timeout_ms, "timeout_ms");
  if (isInvalid(bodyTimeout)) return bodyTimeout;
  const headerValue = timeoutValue(headerTimeout, TIMEOUT_HEADER);
  if (isInvalid(headerValue)) return headerValue;
  return { code: b.code, contextId, language, envVars, timeoutMs: bodyTimeout ?? headerValue };
}

export async function handleExecute(req: IncomingMessage, res: ServerResponse, deps: ExecuteDeps): Promise<void> {
  const access = await deps.access.check(req, { tokenRequired: true });
  let body: unknown;
  try {
    body = await readJsonBody(req);
  } catch (error) {
    if (error instanceof BurrowError && error.reason === INVALID_JSON) return sendValidationError(res, "", error.message, "value_error.jsondecode");
    throw error;
  }
  const header = req.headers[TIMEOUT_HEADER];
  const request = parseRequest(body, Array.isArray(header) ? header[0] : header);
  if (isInvalid(request)) return sendValidationError(res, request.field, request.msg, request.type);
  if (request.contextId !== undefined && request.language !== undefined) {
    throw new BurrowError(Code.InvalidArgument, "Only one of context_id or language can be provided");
  }
  const context = request.contextId !== undefined ? deps.registry.require(request.contextId) : await deps.registry.defaultFor(request.language);
  const client = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) client.abort();
  });
  const out = new ExecutionResponse(res, deps.response);
  try {
    const timeoutMs = request.timeoutMs ?? deps.defaultTimeoutMs;
    for await (const item of context.run(request.code, {
      signal: client.signal,
      timeoutMs,
      envVars: request.envVars,
      sandboxEnv: access.sandboxEnv,
    })) {
      out.write(item);
    }
  } catch (error) {
    deps.logger.error("execution failed", { context: context.id, err: error });
    out.write({ type: "error", name: "ExecutionError", value: (error as Error).message, traceback: "" });
  } finally {
    out.end();
  }
}
