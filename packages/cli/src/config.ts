// The CLI's settings, resolved once per process into a frozen object: a flag wins, then the environment
// variable documented on the field, then the named default. Nothing else in the CLI reads the environment.
//
// The server's own settings are not repeated here. `burrow up` passes the server flags it was given (host, port,
// domain) to the server's resolver (resolveServerConfig in @burrow/server), which applies its own BURROW_*
// variables and defaults; so a server setting added there works through its variable with no change here.
import { isAbsolute, resolve } from "node:path";
import type { ServerConfigInput } from "@burrow/server";
import { usageError } from "./command.js";
import { parseInteger } from "./numbers.js";

// The orchestrator and the server use the same defaults; they are not imported because their entry points load
// the whole package (test/config.test.ts checks that they agree).
export const DEFAULT_STATE_DIR = "/var/lib/burrow";
export const DEFAULT_INSTANCE = "main";
export const DEFAULT_SUBNET = "10.213.0.0/16";
/** Idle sandboxes `burrow up` keeps ready: a create takes one instead of starting a sandbox. */
export const DEFAULT_POOL_SIZE = 2;
export const DEFAULT_BUS = "embedded";
export const DEFAULT_LOG_LEVEL = "info";
/** Where client commands find the API when E2B_API_URL is unset: `burrow up`'s default address. */
export const DEFAULT_API_URL = "http://localhost:3000";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The agent bus backend. */
export type BusSpec =
  | { readonly kind: "embedded" }
  | { readonly kind: "nats"; readonly servers: readonly string[] };

export interface CliConfig {
  /**
   * State directory shared by the orchestrator, the server and the embedded bus; client commands read
   * `<stateDir>/api-key` from it when E2B_API_KEY is unset. Made absolute.
   * @default "/var/lib/burrow" (flag --state-dir, env BURROW_STATE_DIR)
   */
  readonly stateDir: string;
  /** Keeps several instances apart on one host (cgroups, bridge, nft tables). @default "main" (flag --instance, env BURROW_INSTANCE) */
  readonly instance: string;
  /** IPv4 subnet for sandbox addresses, CIDR. @default "10.213.0.0/16" (flag --subnet, env BURROW_SUBNET) */
  readonly subnet: string;
  /** Idle sandboxes kept ready; 0 disables the warm pool. @default 2 (flag --pool-size, env BURROW_POOL_SIZE) */
  readonly poolSize: number;
  /** `embedded` (SQLite in the state directory) or NATS JetStream at comma-separated nats:// or tls:// URLs. @default embedded (flag --bus, env BURROW_BUS) */
  readonly bus: BusSpec;
  /** pino level of `burrow up`'s log. @default "info" (env BURROW_LOG_LEVEL) */
  readonly logLevel: LogLevel;
  /**
   * Server settings given as flags to `burrow up`, already parsed; anything absent is left to the server's
   * resolver and its environment variables (BURROW_HOST, BURROW_PORT, BURROW_DOMAIN, BURROW_API_KEY, …).
   */
  readonly server: Readonly<Pick<ServerConfigInput, "host" | "port" | "domain">>;
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
  instance?: string | undefined;
  subnet?: string | undefined;
  poolSize?: string | undefined;
  bus?: string | undefined;
  host?: string | undefined;
  port?: string | undefined;
  domain?: string | undefined;
}

/** Validate flags and environment, apply defaults, and return a frozen config. Errors are usage errors (exit 2). */
export function resolveCliConfig(flags: CliFlags = {}, env: NodeJS.ProcessEnv = process.env): CliConfig {
  // A set-but-empty variable counts as unset, as in the server's resolver.
  const fromEnv = (name: string) => (env[name] === "" ? undefined : env[name]);
  /** The flag's value and its name for errors, else the variable's, else undefined. */
  const pick = (flag: string, value: string | undefined, variable?: string): [string, string] | undefined => {
    if (value !== undefined) return [flag, value];
    const fallback = variable === undefined ? undefined : fromEnv(variable);
    return fallback === undefined ? undefined : [variable as string, fallback];
  };

  const stateDir = pick("--state-dir", flags.stateDir, "BURROW_STATE_DIR")?.[1] ?? DEFAULT_STATE_DIR;
  if (stateDir.trim() === "") throw usageError("--state-dir must not be empty");
  const poolSize = pick("--pool-size", flags.poolSize, "BURROW_POOL_SIZE");
  const logLevel = fromEnv("BURROW_LOG_LEVEL") ?? DEFAULT_LOG_LEVEL;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw usageError(`BURROW_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got '${logLevel}'`);
  }
  const port = pick("--port", flags.port);
  const apiUrl = fromEnv("E2B_API_URL") ?? DEFAULT_API_URL;
  return Object.freeze({
    stateDir: isAbsolute(stateDir) ? stateDir : resolve(stateDir),
    instance: pick("--instance", flags.instance, "BURROW_INSTANCE")?.[1] ?? DEFAULT_INSTANCE,
    subnet: pick("--subnet", flags.subnet, "BURROW_SUBNET")?.[1] ?? DEFAULT_SUBNET,
    poolSize: poolSize ? parseInteger(poolSize[0], poolSize[1]) : DEFAULT_POOL_SIZE,
    bus: parseBus(pick("--bus", flags.bus, "BURROW_BUS") ?? ["--bus", DEFAULT_BUS]),
    logLevel: logLevel as LogLevel,
    server: Object.freeze({
      ...(flags.host !== undefined ? { host: flags.host } : {}),
      ...(port ? { port: parseInteger(port[0], port[1], { max: 65_535 }) } : {}),
      ...(flags.domain !== undefined ? { domain: flags.domain } : {}),
    }),
    apiUrl,
    sandboxUrl: fromEnv("E2B_SANDBOX_URL") ?? apiUrl,
    apiKey: fromEnv("E2B_API_KEY") ?? null,
  });
}

function parseBus([source, spec]: [string, string]): BusSpec {
  if (spec === "embedded") return Object.freeze({ kind: "embedded" });
  const servers = spec.split(",").map((url) => url.trim());
  if (servers.every((url) => /^(nats|tls):\/\/[^/\s]+/.test(url))) return Object.freeze({ kind: "nats", servers: Object.freeze(servers) });
  throw usageError(`${source} must be 'embedded' or nats:// URLs (comma-separated), got '${spec}'`);
}
