// Auto-resume (E2B's `autoResume`): a request routed to a memory-paused sandbox whose lifecycle allows it first
// resumes the sandbox, then is proxied as if it had been running. The control plane does the resume (one per
// sandbox however many requests wait for it, and its timeout starts again); this module only turns the outcome
// into a live sandbox to proxy to or the gateway's answer, and says which requests may wake a sandbox at all.
import type { IncomingMessage } from "node:http";
import type { SandboxRecord } from "@burrow/orchestrator";
import { BurrowError, Code, ENVD_PORT } from "@burrow/protocol";
import { toE2bError } from "../errors.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SandboxRow } from "../store/sandboxes.js";
import { goneBody, jsonAnswer } from "./responses.js";
import type { GatewayAnswer } from "./retry-answer.js";

export type WakeOutcome = { live: { row: SandboxRow; record: SandboxRecord }; answer?: undefined } | { live?: undefined; answer: GatewayAnswer };

/**
 * Whether a request may wake a sandbox. envd's `GET /health` may not: it asks whether the sandbox runs (the SDK's
 * isRunning(), and its probe after a stream broke off), and answering it by resuming would be a wrong answer — worse,
 * a pause drops the SDK's open streams, its probes follow within milliseconds and would wake the sandbox at once.
 */
export function wakesSandbox(req: Pick<IncomingMessage, "method" | "url">, port: number): boolean {
  if (port !== ENVD_PORT || (req.method !== "GET" && req.method !== "HEAD")) return true;
  const path = (req.url ?? "").split("?")[0];
  return path !== "/health";
}

/** Statuses a failed resume keeps, because they tell a client to come back later; anything else is a 502. */
const KEPT_STATUSES = new Set([429, 503, 507]);

/** Resume `sandboxId` for a request routed to it; never throws. */
export async function wakeForRequest(sandboxes: Pick<SandboxService, "autoResume">, sandboxId: string): Promise<WakeOutcome> {
  try {
    return { live: await sandboxes.autoResume(sandboxId) };
  } catch (err) {
    return { answer: wakeFailureAnswer(sandboxId, err) };
  }
}

/** What a client is told when the sandbox it addressed could not be resumed for it. */
export function wakeFailureAnswer(sandboxId: string, err: unknown): GatewayAnswer {
  const code = err instanceof BurrowError ? err.code : undefined;
  // Killed meanwhile: the usual "not found". Paused in a way traffic cannot resume (filesystem-only, or the
  // lifecycle changed under it): the usual "paused"; connect resumes it.
  if (code === Code.NotFound) return jsonAnswer(502, goneBody(sandboxId));
  if (code === Code.FailedPrecondition) return jsonAnswer(502, goneBody(sandboxId, true));
  const { status, body } = toE2bError(err);
  const kept = KEPT_STATUSES.has(status) ? status : 502;
  const message = `The sandbox ${sandboxId} is paused and could not be resumed for this request: ${body.message}`;
  return jsonAnswer(kept, JSON.stringify({ sandboxId, message, code: kept }));
}
