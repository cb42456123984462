// The one configuration resolver of a `burrow up` process: the command's parsed flags plus the environment the entry
// point read, through the orchestrator's and the server's own resolvers (each applies its BURROW_* variables and
// defaults, flag over variable over default), and the CLI's two settings of its own (bus, log level). Nothing
// else in the process resolves settings or reads the environment. Loaded only when `up` or `down` runs: it
// imports the orchestrator and the server.
import { BurrowError, Code } from "@burrow/protocol";
import { resolveOrchestratorConfig, type OrchestratorConfig } from "@burrow/orchestrator";
import { resolveServerConfig, type ServerConfig } from "@burrow/server";
import { usageError } from "./command.js";
import { type Env, DEFAULT_BUS, DEFAULT_LOG_LEVEL, fromEnv } from "./config.js";
import { optionalInteger, parseInteger } from "./numbers.js";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The agent bus backend. */
export type BusSpec =
  | { readonly kind: "embedded" }
  | { readonly kind: "nats"; readonly servers: readonly string[] };

/** `burrow up`'s flags as typed, unparsed; absent flags are left to the resolvers (environment, then defaults). */
export interface UpFlags {
  stateDir?: string | undefined;
  instance?: string | undefined;
  subnet?: string | undefined;
  poolSize?: string | undefined;
  poolSizes?: string | undefined;
  poolShells?: string | undefined;
  memoryPauseMaxAgeMs?: string | undefined;
  bus?: string | undefined;
  host?: string | undefined;
  port?: string | undefined;
  domain?: string | undefined;
  modelGatewayPort?: string | undefined;
  /** Comma-separated nats:// URLs of the cluster to join as a node. */
  cluster?: string | undefined;
  nodeName?: string | undefined;
  nodeUrl?: string | undefined;
  clusterMoveMaxMb?: string | undefined;
}

export interface UpConfig {
  /** Resolved by the orchestrator's resolver (BURROW_STATE_DIR, BURROW_INSTANCE, BURROW_SUBNET, BURROW_POOL_SIZE, …). */
  readonly orchestrator: Readonly<OrchestratorConfig>;
  /** Resolved by the server's resolver (BURROW_HOST, BURROW_PORT, BURROW_DOMAIN, BURROW_API_KEY, …), in the orchestrator's state directory. */
  readonly server: ServerConfig;
  /**
   * `embedded` (SQLite in the state directory) or NATS JetStream at comma-separated nats:// or tls:// URLs.
   * @default embedded; on a node of a cluster, the cluster's NATS servers (flag --bus, env BURROW_BUS)
   */
  readonly bus: BusSpec;
  /** pino level of the log. @default "info" (env BURROW_LOG_LEVEL) */
  readonly logLevel: LogLevel;
}

/** Resolve everything `burrow up` runs on. Every bad flag or variable is a usage error (exit 2) that names it. */
export function resolveUpConfig(flags: UpFlags, env: Env): UpConfig {
  if (flags.stateDir?.trim() === "") throw usageError("--state-dir must not be empty");
  const poolSize = optionalInteger("--pool-size", flags.poolSize);
  const poolSizes = flags.poolSizes === undefined ? undefined : parsePoolSizes("--pool-sizes", flags.poolSizes);
  const poolShells = optionalInteger("--pool-shells", flags.poolShells);
  const port = optionalInteger("--port", flags.port, { max: 65_535 });
  const modelGatewayPort = optionalInteger("--model-gateway-port", flags.modelGatewayPort, { max: 65_535 });
  const memoryPauseMaxAgeMs = optionalInteger("--memory-pause-max-age-ms", flags.memoryPauseMaxAgeMs, { min: 1 });
  const moveMaxMB = optionalInteger("--cluster-move-max-mb", flags.clusterMoveMaxMb, { min: 1 });
  const logLevel = fromEnv(env, "BURROW_LOG_LEVEL") ?? DEFAULT_LOG_LEVEL;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw usageError(`BURROW_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got '${logLevel}'`);
  }
  const busSpec = flags.bus !== undefined ? { source: "--bus", spec: flags.bus } : fromEnv(env, "BURROW_BUS") !== undefined ? { source: "BURROW_BUS", spec: fromEnv(env, "BURROW_BUS")! } : undefined;
  return asUsageErrors(() => {
    const orchestrator = resolveOrchestratorConfig(
      {
        ...defined({ stateDir: flags.stateDir, instance: flags.instance, subnet: flags.subnet, memoryPauseMaxAgeMs }),
        pool: defined({ size: poolSize, sizes: poolSizes, shells: poolShells }),
      },
      env,
    );
    const server = resolveServerConfig(
      {
        ...defined({ host: flags.host, port, domain: flags.domain }),
        ...(modelGatewayPort !== undefined ? { modelGateway: { port: modelGatewayPort } } : {}),
        ...(flags.cluster !== undefined || flags.nodeName !== undefined || flags.nodeUrl !== undefined || moveMaxMB !== undefined
          ? {
              cluster: defined({
                servers: flags.cluster?.split(",").map((url) => url.trim()).filter(Boolean),
                nodeName: flags.nodeName,
                advertiseUrl: flags.nodeUrl,
                moveMaxMB,
              }),
            }
          : {}),
        stateDir: orchestrator.stateDir,
      },
      env,
    );
    // A node of a cluster shares one bus with the others unless told otherwise: triggers, queues and events that
    // stop at a node's edge would make a cluster several Burrows behind one URL.
    const bus = busSpec ? parseBus(busSpec.source, busSpec.spec) : server.cluster ? Object.freeze({ kind: "nats" as const, servers: server.cluster.servers }) : parseBus("default", DEFAULT_BUS);
    return Object.freeze({ orchestrator, server, bus, logLevel: logLevel as LogLevel });
  });
}

/**
 * `burrow down`'s orchestrator settings: the instance and its state directory and subnet, flag over variable over
 * default, as `up` resolves them; no pool.
 */
export function resolveDownConfig(flags: Pick<UpFlags, "stateDir" | "instance" | "subnet">, env: Env): Readonly<OrchestratorConfig> {
  if (flags.stateDir?.trim() === "") throw usageError("--state-dir must not be empty");
  return asUsageErrors(() =>
    resolveOrchestratorConfig({ ...defined({ stateDir: flags.stateDir, instance: flags.instance, subnet: flags.subnet }), pool: { size: 0 } }, env),
  );
}

/** A resolver's refusal of a setting is the caller's mistake: a usage error, exit code 2. */
function asUsageErrors<T>(resolve: () => T): T {
  try {
    return resolve();
  } catch (error) {
    if (error instanceof BurrowError && error.code === Code.InvalidArgument) throw usageError(error.message);
    throw error;
  }
}

/** The object without its undefined fields, so that an absent flag leaves the field to the resolver. */
function defined<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** `name=N,name=N` (template names or aliases, non-negative counts). */
function parsePoolSizes(source: string, spec: string): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const item of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const [name, count, ...rest] = item.split("=").map((s) => s.trim());
    if (!name || count === undefined || rest.length > 0) throw usageError(`${source} must be template=N pairs separated by commas, got '${spec}'`);
    sizes[name] = parseInteger(`${source} (${name})`, count);
  }
  return sizes;
}

function parseBus(source: string, spec: string): BusSpec {
  if (spec === "embedded") return Object.freeze({ kind: "embedded" });
  const servers = spec.split(",").map((url) => url.trim());
  if (servers.every((url) => /^(nats|tls):\/\/[^/\s]+/.test(url))) return Object.freeze({ kind: "nats", servers: Object.freeze(servers) });
  throw usageError(`${source} must be 'embedded' or nats:// URLs (comma-separated), got '${spec}'`);
}
