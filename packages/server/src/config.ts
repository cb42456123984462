// Server options are resolved once, up front, into a frozen object: defaults are named constants and the
// only environment variables read are the ones documented on each field, from the environment the process's entry
// point passes in (this package never reads process.env for its settings).
import { isAbsolute, resolve } from "node:path";
import { DEFAULT_SANDBOX_EVENT_MAX_AGE_MS, DEFAULT_SANDBOX_EVENT_MAX_BYTES, type SandboxEventStreamLimits } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import { resolveFsEventLimits, type FsEventLimits } from "./bus/fs-event-limits.js";
import { resolveOutputEventLimits, type OutputEventLimits } from "./bus/output-event-throttle.js";
import { resolvePositiveLimits } from "./positive-limits.js";
import { resolveQuotaDefaults, type TeamQuotaOverrides, type TeamQuotaValues } from "./teams/team-quotas.js";
import { resolveSandboxLogLimits, type SandboxLogLimits } from "./logs/log-limits.js";
import { resolveClusterConfig, type ClusterConfig, type ClusterConfigInput } from "./cluster/cluster-config.js";

type EventStreamLimits = Required<SandboxEventStreamLimits>;
const EVENT_STREAM_DEFAULTS: EventStreamLimits = { maxAgeMs: DEFAULT_SANDBOX_EVENT_MAX_AGE_MS, maxBytes: DEFAULT_SANDBOX_EVENT_MAX_BYTES };
const EVENT_STREAM_ENV = { maxAgeMs: "BURROW_EVENT_STREAM_MAX_AGE_MS", maxBytes: "BURROW_EVENT_STREAM_MAX_BYTES" } as const;

/** Size limit of a new volume: 1 GiB. */
const DEFAULT_VOLUME_MB = 1024;

/** Loopback by default: the API key is the only guard, so exposing the port must be a conscious choice. */
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 3000;
export const DEFAULT_STATE_DIR = "/var/lib/burrow";
/** E2B's default sandbox lifetime when a create/connect request names none. */
export const DEFAULT_TIMEOUT_SEC = 300;
/** E2B's upper bound for Pro teams (24 h). */
export const DEFAULT_MAX_TIMEOUT_SEC = 86_400;
/** REST bodies are small JSON documents; file traffic goes through the gateway, which has no limit. */
export const DEFAULT_BODY_LIMIT_BYTES = 1_048_576;
/** E2B samples sandbox metrics every 5 s. */
export const DEFAULT_METRICS_INTERVAL_MS = 5_000;
/** One hour of samples at the default interval. */
export const DEFAULT_METRICS_RETENTION = 720;
/** E2B's deprecated `clientID`, still required by its schema; one node answers for all sandboxes. */
export const DEFAULT_CLIENT_ID = "burrow";
/** `domain` value (the default) that the server turns into `burrow.localhost:<port>` where that works (local-domain.ts). */
export const AUTO_DOMAIN = "auto";

export interface ServerConfig {
  /** Interface to listen on. @default "127.0.0.1" (env BURROW_HOST) */
  readonly host: string;
  /** TCP port for the API and the gateway (one port for both); 0 picks a free port. @default 3000 (env BURROW_PORT) */
  readonly port: number;
  /** Directory holding `burrow.db` and the generated `api-key`. @default "/var/lib/burrow" (env BURROW_STATE_DIR) */
  readonly stateDir: string;
  /**
   * Domain returned as `domain` in Sandbox responses, so that `sandbox.getHost(port)` yields
   * `<port>-<id>.<domain>`; it carries the port unless clients reach the server on 80/443. The gateway accepts
   * `<port>-<id>.<anything>` whatever this is. `"auto"` becomes `burrow.localhost:<port>` once the server listens,
   * if it listens on loopback and this host resolves `*.burrow.localhost` to loopback (libnss-myhostname, which
   * `npm start` installs), else null. With null the SDK falls back to E2B_DOMAIN (e2b.app), which does not lead
   * here. A server used from other machines needs a wildcard DNS record `*.<name>` and BURROW_DOMAIN=`<name>:<port>`.
   * @default "auto" (env BURROW_DOMAIN)
   */
  readonly domain: string | null;
  /**
   * Also accept HTTPS on the same port, so that `https://` + getHost URLs work as E2B's docs write them. The
   * certificate (localhost, burrow.localhost, *.burrow.localhost, 127.0.0.1, ::1) is issued at each start by a local
   * CA created once in `<stateDir>/tls` with openssl; clients trust its `ca.pem` (`burrow ca` prints the path).
   * @default true (env BURROW_TLS=false turns it off)
   */
  readonly tls: boolean;
  /** Sandbox lifetime when create omits `timeout`. @default 300 */
  readonly defaultTimeoutSec: number;
  /** Largest accepted `timeout`; larger values are rejected with 400. @default 86400 */
  readonly maxTimeoutSec: number;
  /** Largest REST request body; larger bodies get 413. @default 1048576 */
  readonly bodyLimitBytes: number;
  // Connection limits of the HTTP server (API and gateway alike), resolved by resolveConnectionLimits below.
  /**
   * A client must send a request's complete head within this time (slow or half-sent heads are closed with 408).
   * @default 60000 (env BURROW_HEADERS_TIMEOUT_MS)
   */
  readonly headersTimeoutMs: number;
  /**
   * A client must send a whole request, body included, within this time; generous because file uploads through
   * the gateway can be large. Streamed responses are not limited by it. 0 turns it off.
   * @default 3600000 (env BURROW_REQUEST_TIMEOUT_MS)
   */
  readonly requestTimeoutMs: number;
  /**
   * A keep-alive connection with no request in flight is closed after this long. Long, because clients pick a
   * pooled connection before they have their request's first byte: undici's fetch reuses one idle for up to the
   * advertised timeout minus 2 s, then reads an upload's body (a 100 MB Blob: seconds on a busy host) before the
   * head goes out. With Node's 5 s the server closed connections idle a second or two in between, and the client
   * got EPIPE instead of the answer; now that needs a client stalled for a minute or a connection idle for one.
   * @default 65000 (env BURROW_KEEP_ALIVE_TIMEOUT_MS)
   */
  readonly keepAliveTimeoutMs: number;
  /**
   * A connection on which nothing moves for this long, while a request body is being received or its answer is
   * awaited, is closed. Once a sandbox has started answering, its response streams as long as the sandbox keeps it
   * open (Connect streams, WebSockets), and the API's event streams ping every 15 s. 0 turns it off.
   * @default 300000 (env BURROW_IDLE_TIMEOUT_MS)
   */
  readonly idleTimeoutMs: number;
  /**
   * Connections one client (remote address) may hold open at once; more are answered 503 and closed. Generous so
   * that one SDK process can run a thousand commands at once. 0 turns it off.
   * @default 4096 (env BURROW_MAX_CONNECTIONS_PER_CLIENT)
   */
  readonly maxConnectionsPerClient: number;
  /** How often every running sandbox's metrics are sampled. @default 5000 */
  readonly metricsIntervalMs: number;
  /** Samples kept per sandbox (a ring; oldest dropped). @default 720 */
  readonly metricsRetention: number;
  /**
   * An API key to register (stored hashed) instead of generating one on first start.
   * @default null (env BURROW_API_KEY)
   */
  readonly apiKey: string | null;
  /** Value of the deprecated `clientID` field. @default "burrow" */
  readonly clientId: string;
  /** How much of each sandbox's log is kept, for how long after it ended, how often it is read (env BURROW_SANDBOX_LOG_*). */
  readonly sandboxLogs: Readonly<SandboxLogLimits>;
  /**
   * Where traces go (an OTLP/HTTP collector's base URL; spans are POSTed to `<url>/v1/traces`); null: tracing off.
   * @default null (env OTEL_EXPORTER_OTLP_ENDPOINT, else BURROW_OTLP_ENDPOINT)
   */
  readonly otlpEndpoint: string | null;
  /**
   * Admission: the host-wide floor that keeps one API key from exhausting the machine (per-team quotas come on
   * top later). Sandboxes live while running or paused; refusals answer 429 (a limit reached) or 507 (the host is
   * short of memory or disk), with a message naming the limit and the current usage.
   */
  readonly admission: AdmissionConfig;
  /** How file events of watched directories are merged and rate-limited per sandbox (env BURROW_FS_EVENT_*, see the fields). */
  readonly fsEvents: Readonly<FsEventLimits>;
  /** How process output published on the bus is merged and cut to a byte budget (env BURROW_OUTPUT_EVENT_*, see the fields). */
  readonly outputEvents: Readonly<OutputEventLimits>;
  /** How long and how much of the sandbox event stream is kept (env BURROW_EVENT_STREAM_MAX_AGE_MS, _MAX_BYTES; 24 h, 1 GiB). */
  readonly eventStream: Readonly<EventStreamLimits>;
  /** Size limit of a new volume in MiB (env BURROW_VOLUME_DEFAULT_MB; 1024). */
  readonly volumeDefaultMB: number;
  /**
   * Where the model gateway listens (OpenAI- and Anthropic-compatible endpoints with failover), on a listener of its
   * own so that sandboxes can be sent to it alone. Port 0 picks a free port at each start; GET
   * /burrow/v1/models/gateway answers where it is.
   * @default host "127.0.0.1" (env BURROW_MODEL_GATEWAY_HOST), port 0 (env BURROW_MODEL_GATEWAY_PORT)
   */
  readonly modelGateway: Readonly<ModelGatewayAddress>;
  /**
   * A PEM file of CAs that upstream servers' certificates are also checked against when the egress proxy applies a
   * sandbox's header transforms over HTTPS (beside the host's system trust store), e.g. a private PKI's.
   * @default null (env BURROW_EGRESS_UPSTREAM_CA)
   */
  readonly egressUpstreamCa: string | null;
  /** Quotas every team gets unless overridden per team (PATCH /burrow/v1/teams/{id}); 0 = unlimited (env BURROW_TEAM_*, see teams/team-quotas.ts). */
  readonly teamQuotas: Readonly<TeamQuotaValues>;
  /**
   * This server as a node of a cluster coordinated by NATS JetStream (cluster/cluster-config.ts); null: one machine,
   * no NATS. @default null (env BURROW_CLUSTER, BURROW_NODE_NAME, BURROW_NODE_URL, BURROW_CLUSTER_HEARTBEAT_MS, BURROW_CLUSTER_DOWN_AFTER_MS)
   */
  readonly cluster: ClusterConfig | null;
}

/** The model gateway's listening address. */
export interface ModelGatewayAddress {
  host: string;
  /** 0 picks a free port. */
  port: number;
}

export interface AdmissionConfig {
  /** Sandboxes alive at once, running and paused together. @default 2000 (env BURROW_MAX_SANDBOXES) */
  readonly maxSandboxes: number;
  /**
   * The memory limits of all live sandboxes together may reach this multiple of the host's memory. Idle sandboxes
   * use a small part of their limit (a 512 MB `base` sandbox holds ~9 MB), hence the generous default.
   * @default 32 (env BURROW_MEMORY_OVERCOMMIT)
   */
  readonly memoryOvercommit: number;
  /** New and resumed sandboxes are refused (507) while the host's MemAvailable is below this; 0 turns it off. @default 512 (env BURROW_MIN_AVAILABLE_MEMORY_MB) */
  readonly minAvailableMemoryMB: number;
  /** …and while the filesystem holding the state directory has less free space than this; 0 turns it off. @default 2048 (env BURROW_MIN_FREE_DISK_MB) */
  readonly minFreeDiskMB: number;
  /** Template builds running at once. @default 4 (env BURROW_MAX_CONCURRENT_BUILDS) */
  readonly maxConcurrentBuilds: number;
  /**
   * A sandbox paused longer than this is killed as if it had timed out; 0 is no limit (paused sandboxes stay until
   * killed, as in E2B). @default 0 (env BURROW_MAX_PAUSED_SEC)
   */
  readonly maxPausedSec: number;
  /**
   * Disk space the snapshots of one owner (an API key) may hold together, the hidden snapshot a fork starts from
   * included while its forks run. Measured like `du` (allocated blocks per file, so extents a snapshot shares
   * with its sandbox by reflink count in full). @default 20480 (20 GiB) (env BURROW_SNAPSHOT_QUOTA_MB)
   */
  readonly snapshotQuotaMB: number;
  /** Snapshots kept from one sandbox. @default 32 (env BURROW_MAX_SNAPSHOTS_PER_SANDBOX) */
  readonly maxSnapshotsPerSandbox: number;
}

export const DEFAULT_ADMISSION: AdmissionConfig = Object.freeze({
  maxSandboxes: 2000,
  memoryOvercommit: 32,
  minAvailableMemoryMB: 512,
  minFreeDiskMB: 2048,
  maxConcurrentBuilds: 4,
  maxPausedSec: 0,
  snapshotQuotaMB: 20_480,
  maxSnapshotsPerSandbox: 32,
});

const ADMISSION_ENV: Record<keyof AdmissionConfig, string> = {
  maxSandboxes: "BURROW_MAX_SANDBOXES",
  memoryOvercommit: "BURROW_MEMORY_OVERCOMMIT",
  minAvailableMemoryMB: "BURROW_MIN_AVAILABLE_MEMORY_MB",
  minFreeDiskMB: "BURROW_MIN_FREE_DISK_MB",
  maxConcurrentBuilds: "BURROW_MAX_CONCURRENT_BUILDS",
  maxPausedSec: "BURROW_MAX_PAUSED_SEC",
  snapshotQuotaMB: "BURROW_SNAPSHOT_QUOTA_MB",
  maxSnapshotsPerSandbox: "BURROW_MAX_SNAPSHOTS_PER_SANDBOX",
};

/** Admission settings: input, else the documented env variable, else the default; floors may be 0, the rest not. */
function resolveAdmission(input: Partial<AdmissionConfig> = {}, env: NodeJS.ProcessEnv): AdmissionConfig {
  const out: Record<string, number> = {};
  for (const key of Object.keys(DEFAULT_ADMISSION) as (keyof AdmissionConfig)[]) {
    const setting = numberSetting(`admission.${key}`, input[key], env, ADMISSION_ENV[key], DEFAULT_ADMISSION[key]);
    if (key === "memoryOvercommit") {
      if (!Number.isFinite(setting.value) || setting.value <= 0) throw configError(`${setting.name} must be a positive number, got ${setting.shown}`);
      out[key] = setting.value;
    } else {
      out[key] = positiveInt(setting, { allowZero: key === "minAvailableMemoryMB" || key === "minFreeDiskMB" || key === "maxPausedSec" });
    }
  }
  return Object.freeze(out as unknown as AdmissionConfig);
}

export type ServerConfigInput = Partial<Omit<ServerConfig, "admission" | "fsEvents" | "outputEvents" | "eventStream" | "sandboxLogs" | "modelGateway" | "teamQuotas" | "cluster">> & {
  modelGateway?: Partial<ModelGatewayAddress>;
  sandboxLogs?: Partial<SandboxLogLimits>;
  admission?: Partial<AdmissionConfig>;
  fsEvents?: Partial<FsEventLimits>;
  outputEvents?: Partial<OutputEventLimits>;
  eventStream?: Partial<EventStreamLimits>;
  teamQuotas?: TeamQuotaOverrides;
  cluster?: ClusterConfigInput | null;
};

/** A numeric setting with the name a message about it uses: its field's when given as input, else its variable's. */
interface NumberSetting {
  readonly name: string;
  readonly value: number;
  /** The value as the operator wrote it, for messages: a variable's text quoted, so "lots" is not shown as NaN. */
  readonly shown: string;
}

/** The input's value, else the variable's (set and non-empty), else the default. */
function numberSetting(field: string, input: number | undefined, env: NodeJS.ProcessEnv, variable: string | undefined, fallback: number): NumberSetting {
  if (input !== undefined) return { name: field, value: input, shown: String(input) };
  const raw = variable === undefined ? undefined : env[variable];
  if (variable !== undefined && raw !== undefined && raw !== "") {
    return { name: variable, value: raw.trim() === "" ? Number.NaN : Number(raw), shown: `'${raw}'` };
  }
  return { name: field, value: fallback, shown: String(fallback) };
}

function positiveInt({ name, value, shown }: NumberSetting, { allowZero = false } = {}): number {
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw configError(`${name} must be a ${allowZero ? "non-negative" : "positive"} integer, got ${shown}`);
  }
  return value;
}

/** A setting that only the input sets (no variable). */
function inputInt(field: string, input: number | undefined, fallback: number): number {
  return positiveInt(numberSetting(field, input, {}, undefined, fallback));
}

function parseBoolean(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === "") return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw configError(`${name} must be true or false, got '${raw}'`);
}

/** A bad setting: InvalidArgument, so that it reads as the caller's mistake wherever it is reported. */
function configError(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_config" });
}

/**
 * Validate options, apply the environment's fallbacks and the defaults, and return a frozen config; input wins over
 * the environment, and a variable that is set but empty counts as unset. `env` is the process's environment as its
 * entry point read it (`burrow up` passes process.env); without one only the defaults apply. Resolving a resolved
 * config returns an equal one. Never mutates its input. Bad values are InvalidArgument BurrowErrors (reason
 * `invalid_config`) whose message names the setting.
 */
export function resolveServerConfig(input: ServerConfigInput = {}, env: NodeJS.ProcessEnv = {}): ServerConfig {
  const portSetting = numberSetting("port", input.port, env, "BURROW_PORT", DEFAULT_PORT);
  const port = positiveInt(portSetting, { allowZero: true });
  if (port > 65_535) throw configError(`${portSetting.name} must be ≤ 65535, got ${portSetting.shown}`);
  const stateDir = input.stateDir ?? (env["BURROW_STATE_DIR"] || DEFAULT_STATE_DIR);
  const defaultTimeoutSec = inputInt("defaultTimeoutSec", input.defaultTimeoutSec, DEFAULT_TIMEOUT_SEC);
  const maxTimeoutSec = inputInt("maxTimeoutSec", input.maxTimeoutSec, DEFAULT_MAX_TIMEOUT_SEC);
  if (defaultTimeoutSec > maxTimeoutSec) {
    throw configError(`defaultTimeoutSec (${defaultTimeoutSec}) exceeds maxTimeoutSec (${maxTimeoutSec})`);
  }
  // `null` is an explicit "none" (as in a resolved config), so only `undefined` falls back to the environment.
  const apiKey = input.apiKey !== undefined ? input.apiKey : env["BURROW_API_KEY"] || null;
  if (apiKey !== null && apiKey.trim() === "") throw configError("apiKey must not be empty");
  return Object.freeze({
    host: input.host ?? (env["BURROW_HOST"] || DEFAULT_HOST),
    port,
    stateDir: isAbsolute(stateDir) ? stateDir : resolve(stateDir),
    domain: input.domain !== undefined ? input.domain : env["BURROW_DOMAIN"] || AUTO_DOMAIN,
    tls: input.tls ?? parseBoolean("BURROW_TLS", env["BURROW_TLS"], true),
    defaultTimeoutSec,
    maxTimeoutSec,
    bodyLimitBytes: inputInt("bodyLimitBytes", input.bodyLimitBytes, DEFAULT_BODY_LIMIT_BYTES),
    ...resolveConnectionLimits(input, env),
    metricsIntervalMs: inputInt("metricsIntervalMs", input.metricsIntervalMs, DEFAULT_METRICS_INTERVAL_MS),
    metricsRetention: inputInt("metricsRetention", input.metricsRetention, DEFAULT_METRICS_RETENTION),
    apiKey,
    clientId: input.clientId ?? DEFAULT_CLIENT_ID,
    sandboxLogs: Object.freeze(resolveSandboxLogLimits(input.sandboxLogs, env)),
    otlpEndpoint: resolveOtlpEndpoint(input.otlpEndpoint, env),
    admission: resolveAdmission(input.admission, env),
    fsEvents: Object.freeze(resolveFsEventLimits(input.fsEvents, env)),
    outputEvents: Object.freeze(resolveOutputEventLimits(input.outputEvents, env)),
    eventStream: Object.freeze(resolvePositiveLimits(EVENT_STREAM_DEFAULTS, EVENT_STREAM_ENV, input.eventStream, env)),
    teamQuotas: Object.freeze(resolveQuotaDefaults(input.teamQuotas, env)),
    volumeDefaultMB: positiveInt(numberSetting("volumeDefaultMB", input.volumeDefaultMB, env, "BURROW_VOLUME_DEFAULT_MB", DEFAULT_VOLUME_MB)),
    modelGateway: resolveModelGatewayAddress(input.modelGateway, env),
    egressUpstreamCa: input.egressUpstreamCa !== undefined ? input.egressUpstreamCa : env["BURROW_EGRESS_UPSTREAM_CA"] || null,
    cluster: resolveClusterConfig(input.cluster, env),
  });
}

function resolveModelGatewayAddress(input: Partial<ModelGatewayAddress> | undefined, env: NodeJS.ProcessEnv): Readonly<ModelGatewayAddress> {
  const setting = numberSetting("modelGateway.port", input?.port, env, "BURROW_MODEL_GATEWAY_PORT", 0);
  const port = positiveInt(setting, { allowZero: true });
  if (port > 65_535) throw configError(`${setting.name} must be ≤ 65535, got ${setting.shown}`);
  const host = input?.host ?? (env["BURROW_MODEL_GATEWAY_HOST"] || DEFAULT_HOST);
  if (host.trim() === "") throw configError("modelGateway.host must not be empty");
  return Object.freeze({ host, port });
}

/** The OTLP endpoint: the input's, else OTEL_EXPORTER_OTLP_ENDPOINT, else BURROW_OTLP_ENDPOINT; an http(s) URL. */
function resolveOtlpEndpoint(input: string | null | undefined, env: NodeJS.ProcessEnv): string | null {
  const [name, value] =
    input !== undefined ? ["otlpEndpoint", input]
    : env["OTEL_EXPORTER_OTLP_ENDPOINT"] ? ["OTEL_EXPORTER_OTLP_ENDPOINT", env["OTEL_EXPORTER_OTLP_ENDPOINT"]]
    : ["BURROW_OTLP_ENDPOINT", env["BURROW_OTLP_ENDPOINT"] || null];
  if (value === null) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw configError(`${name} must be an http(s) URL, got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw configError(`${name} must be an http(s) URL, got "${value}"`);
  return value;
}

type ConnectionLimits = Pick<
  ServerConfig,
  "headersTimeoutMs" | "requestTimeoutMs" | "keepAliveTimeoutMs" | "idleTimeoutMs" | "maxConnectionsPerClient"
>;

/** Connection limits of the HTTP server (see the ServerConfig fields of the same names). */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = Object.freeze({
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 3_600_000,
  keepAliveTimeoutMs: 65_000,
  idleTimeoutMs: 300_000,
  maxConnectionsPerClient: 4096,
});

const CONNECTION_LIMITS_ENV: Record<keyof ConnectionLimits, string> = {
  headersTimeoutMs: "BURROW_HEADERS_TIMEOUT_MS",
  requestTimeoutMs: "BURROW_REQUEST_TIMEOUT_MS",
  keepAliveTimeoutMs: "BURROW_KEEP_ALIVE_TIMEOUT_MS",
  idleTimeoutMs: "BURROW_IDLE_TIMEOUT_MS",
  maxConnectionsPerClient: "BURROW_MAX_CONNECTIONS_PER_CLIENT",
};

/** Node's timers hold at most 2^31-1 ms; a larger value would silently become 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

function resolveConnectionLimits(input: Partial<ConnectionLimits>, env: NodeJS.ProcessEnv): ConnectionLimits {
  const out = {} as { -readonly [K in keyof ConnectionLimits]: number };
  for (const key of Object.keys(DEFAULT_CONNECTION_LIMITS) as (keyof ConnectionLimits)[]) {
    const setting = numberSetting(key, input[key], env, CONNECTION_LIMITS_ENV[key], DEFAULT_CONNECTION_LIMITS[key]);
    // Off (0) is allowed where the limit is optional; a server without a header or keep-alive timeout is not.
    const allowZero = key !== "headersTimeoutMs" && key !== "keepAliveTimeoutMs";
    out[key] = positiveInt(setting, { allowZero });
    if (key !== "maxConnectionsPerClient" && out[key] > MAX_TIMER_MS) {
      throw configError(`${setting.name} must be ≤ ${MAX_TIMER_MS}, got ${setting.shown}`);
    }
  }
  if (out.requestTimeoutMs !== 0 && out.headersTimeoutMs > out.requestTimeoutMs) {
    throw configError(`headersTimeoutMs (${out.headersTimeoutMs}) exceeds requestTimeoutMs (${out.requestTimeoutMs})`);
  }
  return out;
}
