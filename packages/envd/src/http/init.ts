import type { IncomingMessage, ServerResponse } from "node:http";
import { BurrowError, Code } from "@burrow/protocol/errors";
import type { EnvdContext } from "../context.js";
import type { EnvdState } from "../state.js";
import { safeEqual } from "../auth/compare.js";
import { UNAUTHORIZED_MESSAGE } from "../auth/access.js";
import { readJsonBody } from "./body.js";
import { sendEmpty } from "./respond.js";

/** A /init request that passed validation; applying it cannot fail. */
interface InitUpdate {
  envVars?: Record<string, string>;
  /** "" clears the token. */
  accessToken?: string;
  defaultUser?: string;
  /** "" clears the default workdir. */
  defaultWorkdir?: string;
}

// Control characters can never arrive in an X-Access-Token header, so a token holding one would lock every
// client out; NUL cannot be in an environment entry or a path.
const CONTROL = /[\x00-\x1f\x7f]/;

/** Checks every field before anything is applied, so a bad request changes nothing. */
function validateInit(raw: unknown, env: EnvdContext): InitUpdate {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new BurrowError(Code.InvalidArgument, "body must be a JSON object");
  const b = raw as Record<string, unknown>;
  const str = (k: string): string | undefined => {
    const v = b[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw new BurrowError(Code.InvalidArgument, `${k} must be a string`);
    return v;
  };
  const update: InitUpdate = {};
  if (b.envVars !== undefined && b.envVars !== null) {
    if (typeof b.envVars !== "object" || Array.isArray(b.envVars)) throw new BurrowError(Code.InvalidArgument, "envVars must be an object of strings");
    update.envVars = {};
    for (const [k, v] of Object.entries(b.envVars as Record<string, unknown>)) {
      if (typeof v !== "string") throw new BurrowError(Code.InvalidArgument, `envVars.${k} must be a string`);
      if (!k || k.includes("=") || k.includes("\0")) throw new BurrowError(Code.InvalidArgument, `invalid env var name '${k}'`);
      if (v.includes("\0")) throw new BurrowError(Code.InvalidArgument, `env var '${k}' must not contain NUL`);
      update.envVars[k] = v;
    }
  }
  const accessToken = str("accessToken");
  if (accessToken !== undefined) {
    if (CONTROL.test(accessToken)) throw new BurrowError(Code.InvalidArgument, "accessToken must not contain control characters");
    update.accessToken = accessToken;
  }
  const defaultUser = str("defaultUser");
  if (defaultUser) {
    if (!env.users.lookup(defaultUser)) throw new BurrowError(Code.InvalidArgument, `defaultUser '${defaultUser}' does not exist in the sandbox`);
    update.defaultUser = defaultUser;
  }
  const defaultWorkdir = str("defaultWorkdir");
  if (defaultWorkdir !== undefined) {
    if (defaultWorkdir && (!defaultWorkdir.startsWith("/") || defaultWorkdir.includes("\0"))) {
      throw new BurrowError(Code.InvalidArgument, `defaultWorkdir must be an absolute path, got '${defaultWorkdir}'`);
    }
    update.defaultWorkdir = defaultWorkdir;
  }
  // timestamp, volumeMounts, hyperloopIP, lifecycleID, caBundle: accepted and ignored (the orchestrator owns them)
  return update;
}

function applyInit(state: EnvdState, u: InitUpdate): void {
  if (u.envVars) for (const [k, v] of Object.entries(u.envVars)) state.envVars.set(k, v);
  if (u.accessToken !== undefined) state.accessToken = u.accessToken || undefined;
  if (u.defaultUser !== undefined) state.defaultUser = u.defaultUser;
  if (u.defaultWorkdir !== undefined) state.defaultWorkdir = u.defaultWorkdir || undefined;
}

/**
 * POST /init. With an init token configured (BURROW_ENVD_INIT_TOKEN) the caller must present it, or the current
 * access token, in X-Access-Token. Without one, upstream's rule: the first /init may set the token; later calls
 * must present it.
 */
export async function postInit(env: EnvdContext, initToken: string | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const rawHeader = req.headers["x-access-token"];
  const header = Array.isArray(rawHeader) ? rawHeader[0] : rawHeader;
  const current = env.state.accessToken;
  const allowed = initToken !== undefined
    ? header !== undefined && (safeEqual(header, initToken) || (current !== undefined && safeEqual(header, current)))
    : current === undefined || (header !== undefined && safeEqual(header, current));
  if (!allowed) throw new BurrowError(Code.Unauthenticated, UNAUTHORIZED_MESSAGE);

  const update = validateInit(await readJsonBody(req, 1024 * 1024), env);
  const { state } = env;
  applyInit(state, update);
  env.log.info("initialized", {
    envVars: state.envVars.size, token: state.accessToken !== undefined, defaultUser: state.defaultUser,
    defaultWorkdir: state.defaultWorkdir,
  });
  sendEmpty(res, 204);
}
