import type { IncomingMessage, ServerResponse } from "node:http";
import type { EnvdContext } from "../context.js";
import { safeEqual } from "../auth/compare.js";
import { UNAUTHORIZED_MESSAGE } from "../auth/access.js";
import { HttpError } from "../errors.js";
import { readJsonBody } from "./body.js";
import { sendEmpty } from "./respond.js";

interface InitBody {
  envVars?: Record<string, string>;
  accessToken?: string;
  defaultUser?: string;
  defaultWorkdir?: string;
}

function parseInit(raw: unknown): InitBody {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new HttpError(400, "body must be a JSON object");
  const b = raw as Record<string, unknown>;
  const str = (k: string): string | undefined => {
    const v = b[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw new HttpError(400, `${k} must be a string`);
    return v;
  };
  let envVars: Record<string, string> | undefined;
  if (b.envVars !== undefined && b.envVars !== null) {
    if (typeof b.envVars !== "object" || Array.isArray(b.envVars)) throw new HttpError(400, "envVars must be an object");
    envVars = {};
    for (const [k, v] of Object.entries(b.envVars as Record<string, unknown>)) {
      if (typeof v !== "string") throw new HttpError(400, `envVars.${k} must be a string`);
      if (!k || k.includes("=") || k.includes("\0") || v.includes("\0")) throw new HttpError(400, `invalid env var '${k}'`);
      envVars[k] = v;
    }
  }
  // timestamp, volumeMounts, hyperloopIP, lifecycleID, caBundle: accepted and ignored (the orchestrator owns them)
  return { envVars, accessToken: str("accessToken"), defaultUser: str("defaultUser"), defaultWorkdir: str("defaultWorkdir") };
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
  if (!allowed) throw new HttpError(401, UNAUTHORIZED_MESSAGE);

  const body = parseInit(await readJsonBody(req, 1024 * 1024));
  const { state } = env;
  if (body.envVars) for (const [k, v] of Object.entries(body.envVars)) state.envVars.set(k, v);
  if (body.accessToken !== undefined) state.accessToken = body.accessToken || undefined;
  if (body.defaultUser) {
    if (!env.users.lookup(body.defaultUser)) throw new HttpError(400, `user '${body.defaultUser}' not found`);
    state.defaultUser = body.defaultUser;
  }
  if (body.defaultWorkdir !== undefined) state.defaultWorkdir = body.defaultWorkdir || undefined;
  env.log.info("initialized", {
    envVars: state.envVars.size, token: state.accessToken !== undefined, defaultUser: state.defaultUser,
    defaultWorkdir: state.defaultWorkdir,
  });
  sendEmpty(res, 204);
}
