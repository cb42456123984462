import type { SandboxUser } from "../users/user-db.js";

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * A process environment, lowest precedence first: PATH, HOME, USER, LOGNAME, then the sandbox env vars from
 * /init, then the request's envs. envd's own environment is deliberately not inherited (it is the runtime's).
 */
export function processEnvironment(
  user: SandboxUser,
  sandboxEnv: ReadonlyMap<string, string>,
  requestEnv: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = { PATH: DEFAULT_PATH, HOME: user.home, USER: user.name, LOGNAME: user.name };
  for (const [k, v] of sandboxEnv) env[k] = v;
  for (const [k, v] of Object.entries(requestEnv)) env[k] = v;
  return env;
}
