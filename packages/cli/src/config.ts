// The client commands' settings (and `burrow ca`'s), resolved once per process into a frozen object: a flag wins,
// then the environment variable documented on the field, then the named default. The environment is the one the
// entry point (main.ts) read; nothing in the CLI reads process.env itself.
//
// `burrow up` and `burrow down` resolve theirs with the orchestrator's and the server's own resolvers
// (up-config.ts): they pass their parsed flags, and the resolvers apply the BURROW_* variables and defaults. The
// defaults below are what `--help` prints; they are not imported from those packages because their entry points
// load the whole package (test/config.test.ts checks that they agree).
import { isAbsolute, resolve } from "node:path";
import { usageError } from "./command.js";

export const DEFAULT_STATE_DIR = "/var/lib/burrow";
export const DEFAULT_INSTANCE = "main";
export const DEFAULT_SUBNET = "10.213.0.0/16";
/** Idle sandboxes `burrow up` keeps ready: a create takes one instead of starting a sandbox. */
export const DEFAULT_POOL_SIZE = 2;
/** Prepared sandboxes `burrow up` keeps (with a pool): a create of a template without a ready sandbox takes one. */
export const DEFAULT_POOL_SHELLS = 2;
export const DEFAULT_BUS = "embedded";
export const DEFAULT_LOG_LEVEL = "info";
/** Where client commands find the API when E2B_API_URL is unset: `burrow up`'s default address. */
export const DEFAULT_API_URL = "http://localhost:3000";

/** The environment as the entry point read it. */
export type Env = Readonly<NodeJS.ProcessEnv>;

export interface CliConfig {
  /**
   * State directory of the local server: client commands read `<stateDir>/api-key` from it when E2B_API_KEY is
   * unset, `burrow ca` its CA. Made absolute. @default "/var/lib/burrow" (flag --state-dir, env BURROW_STATE_DIR)
   */
  readonly stateDir: string;
  /** E2B API of the sandbox and template commands. @default "http://localhost:3000" (env E2B_API_URL, as the e2b SDK) */
  readonly apiUrl: string;
  /** Where envd traffic goes (exec, shell). @default apiUrl (env E2B_SANDBOX_URL) */
  readonly sandboxUrl: string;
  /** API key of the client commands; null means `<stateDir>/api-key`, read when needed. @default null (env E2B_API_KEY) */
  readonly apiKey: string | null;
}

/** Command-line flags as typed, unparsed; absent flags fall back to the environment and defaults. */
export interface CliFlags {
  stateDir?: string | undefined;
}

/** Validate flags and environment, apply defaults, and return a frozen config. Errors are usage errors (exit 2). */
export function resolveCliConfig(flags: CliFlags, env: Env): CliConfig {
  const stateDir = flags.stateDir ?? fromEnv(env, "BURROW_STATE_DIR") ?? DEFAULT_STATE_DIR;
  if (stateDir.trim() === "") throw usageError("--state-dir must not be empty");
  const apiUrl = fromEnv(env, "E2B_API_URL") ?? DEFAULT_API_URL;
  return Object.freeze({
    stateDir: isAbsolute(stateDir) ? stateDir : resolve(stateDir),
    apiUrl,
    sandboxUrl: fromEnv(env, "E2B_SANDBOX_URL") ?? apiUrl,
    apiKey: fromEnv(env, "E2B_API_KEY") ?? null,
  });
}

/** A variable's value; set but empty counts as unset, as in the server's and the orchestrator's resolvers. */
export function fromEnv(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === "" ? undefined : value;
}
