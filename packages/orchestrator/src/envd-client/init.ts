// /init: hands a started envd its access token, default user and workdir and the sandbox's environment.
import { BurrowError, Code } from "@burrow/protocol";
import type { EnvdTarget } from "./envd-target.js";
import { httpCall, type HttpResult } from "./http-call.js";
import { tokenHeader } from "./transport.js";

export interface EnvdInit {
  envVars: Record<string, string>;
  accessToken: string;
  defaultUser: string;
  defaultWorkdir?: string | undefined;
}

const INIT_TIMEOUT_MS = 5000;

/**
 * `target.accessToken` is the token envd accepts now: the sandbox's init token on a fresh envd, or the access token
 * it was last /init-ed with. A refusal is `internal` whatever envd's status: the caller (the orchestrator) holds the
 * token, so a 401 here is Burrow's fault, not the API client's. Unreachable is `internal` for the same reason.
 */
export async function initEnvd(target: EnvdTarget, init: EnvdInit, signal?: AbortSignal): Promise<void> {
  let res: HttpResult;
  try {
    res = await httpCall(target, "POST", "/init", {
      headers: { "content-type": "application/json", ...tokenHeader(target) },
      body: JSON.stringify({ ...init, timestamp: new Date().toISOString() }),
      signal,
      timeoutMs: INIT_TIMEOUT_MS,
    });
  } catch (error) {
    // An abort stays what it is, so the caller reports a canceled create rather than a failed one.
    if (signal?.aborted) throw error;
    throw new BurrowError(Code.Internal, `envd /init failed: ${(error as Error).message}`, { cause: error });
  }
  if (res.status < 200 || res.status >= 300) throw new BurrowError(Code.Internal, `envd /init answered ${res.status}: ${res.body}`);
}
