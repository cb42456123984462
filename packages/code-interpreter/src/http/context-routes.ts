// /contexts: create, list, restart and remove contexts.
import type { IncomingMessage, ServerResponse } from "node:http";
import { BurrowError } from "@burrow/protocol/errors";
import type { ContextRegistry } from "../contexts/context-registry.js";
import type { AccessGuard } from "./access.js";
import { INVALID_JSON, readJsonBody } from "./body.js";
import { sendJson, sendValidationError } from "./respond.js";

export interface ContextRouteDeps {
  registry: ContextRegistry;
  access: AccessGuard;
}

export async function handleCreateContext(req: IncomingMessage, res: ServerResponse, deps: ContextRouteDeps): Promise<void> {
  await deps.access.check(req, { tokenRequired: false });
  let body: unknown;
  try {
    body = (await readJsonBody(req)) ?? {};
  } catch (error) {
    if (error instanceof BurrowError && error.reason === INVALID_JSON) return sendValidationError(res, "", error.message, "value_error.jsondecode");
    throw error;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return sendValidationError(res, "", "a JSON object is required", "type_error.dict");
  const { language, cwd } = body as Record<string, unknown>;
  for (const [field, value] of [["language", language], ["cwd", cwd]] as const) {
    if (value !== undefined && value !== null && typeof value !== "string") return sendValidationError(res, field, "str type expected", "type_error.str");
  }
  const context = await deps.registry.create({ language: language as string | undefined, cwd: cwd as string | undefined });
  sendJson(res, 200, context.info());
}

export async function handleListContexts(req: IncomingMessage, res: ServerResponse, deps: ContextRouteDeps): Promise<void> {
  await deps.access.check(req, { tokenRequired: false });
  req.resume();
  sendJson(res, 200, deps.registry.list());
}

export async function handleRestartContext(req: IncomingMessage, res: ServerResponse, id: string, deps: ContextRouteDeps): Promise<void> {
  await deps.access.check(req, { tokenRequired: false });
  req.resume();
  await deps.registry.restart(id);
  sendJson(res, 200, null);
}

export async function handleRemoveContext(req: IncomingMessage, res: ServerResponse, id: string, deps: ContextRouteDeps): Promise<void> {
  await deps.access.check(req, { tokenRequired: false });
  req.resume();
  await deps.registry.remove(id);
  sendJson(res, 200, null);
}
