// The orchestrator's settings, resolved once into a frozen object: an input field wins, then the environment variable
// documented on the field, then the named default. The environment is passed in by the process's entry point.
import { isAbsolute, join, resolve } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { parseCidr } from "./network/ipv4.js";
import type { RelayKind } from "./egress/native-relay.js";
import type { SandboxLimits } from "./types.js";
import { registryOptionsFromEnv, type RegistryOptions } from "./templates/bases/registry/registry-options.js";

export interface PoolConfig {
  /** Template alias or id the pool keeps ready. */
  template: string;
  /** Number of idle sandboxes kept ready; 0 disables the pool. */
  size: number;
  /**
   * Idle sandboxes of the shipped templates whose sandboxes wait with their start command run (`code-interpreter-v1`,
   * `desktop`), by name or alias, once the template is in use; without an entry, 1 while `size` > 0. The warm
   * pool's own template takes `size`; other names are not pooled.
   */
  sizes?: Readonly<Record<string, number>>;
  /**
   * Prepared sandboxes of no template yet ("shells"): started on the pool's template with a writable layer of their
   * own, they give a create of any template that has no ready sandbox of its own the template's root in place of
   * theirs (launcher --swap-root), so init, envd and the network are already up. 0 disables them.
   * @default 2 while `size` > 0, else 0 (env BURROW_POOL_SHELLS)
   */
  shells?: number;
}

/** A range of host uids: base … base+count-1. */
export interface UidRange {
  base: number;
  count: number;
}

export interface OrchestratorConfig {
  /** Root of everything the orchestrator keeps: layers, templates, runtime, sandboxes. Made absolute. @default "/var/lib/burrow" (env BURROW_STATE_DIR) */
  stateDir: string;
  /** Where finished base-template builds are cached across state directories. */
  cacheDir: string;
  /** Short name that keeps several instances apart on one host (cgroups, bridge, nft tables). @default "main" (env BURROW_INSTANCE) */
  instance: string;
  /** IPv4 subnet for sandbox addresses, CIDR, /12 to /30. @default "10.213.0.0/16" (env BURROW_SUBNET) */
  subnet: string;
  /** First host uid of the range root inside sandboxes maps to. */
  uidBase: number;
  uidCount: number;
  /**
   * Host uids that own sandboxes' user namespaces, one per live sandbox, leased host-wide by the launcher: the
   * kernel charges per-user budgets (inotify instances and watches, fanotify, message queues, namespaces) used in
   * a sandbox to its owner, so one sandbox filling them leaves host root and other sandboxes theirs. Nothing else
   * may use these uids, and they must not overlap uidBase…uidBase+uidCount-1.
   */
  usernsOwners: UidRange;
  /**
   * First host uid of the sandboxes' own uid ranges: the sandbox whose owner is `usernsOwners.base + i` runs as host
   * uids `uidRangesBase + i * uidCount` …, so the kernel's per-host-uid accounting (pipe buffers, epoll watches) is
   * separate too; its layers are mounted idmapped, so files keep the `uidBase` ids on disk and layers, snapshots and
   * forks are shared unchanged. `usernsOwners.count` ranges must fit below 2^32, clear of the other two ranges.
   * Undefined: every sandbox runs as `uidBase`….
   */
  uidRangesBase: number | undefined;
  /**
   * The warm pool. @default template "base", size 2 (env BURROW_POOL_SIZE), sizes none (env BURROW_POOL_SIZES,
   * `code-interpreter-v1=2,desktop=0`)
   */
  pool: PoolConfig;
  /** Limits of templates that do not set their own. */
  defaultLimits: SandboxLimits;
  /** How long to wait for envd in a new sandbox before giving up. */
  envdReadyTimeoutMs: number;
  /**
   * Where layers and writable layers live: "btrfs" (a loop-mounted btrfs image in the state directory, with a
   * hard disk limit per sandbox and cheap snapshots) or "directory" (plain directories, no disk limits).
   */
  storage: "btrfs" | "directory";
  /** Sets no_new_privs in sandboxes. Off by default because the base template promises passwordless sudo. */
  noNewPrivileges: boolean;
  /**
   * The one host directory whose OCI layouts and image tarballs template builds may import by path
   * (`fromImage('oci:/…' | 'oci-archive:/…' | 'docker-archive:/…')`). Unset refuses every host path; paths in
   * the state or cache directory are refused whatever it is. @default unset (env BURROW_IMAGE_DIR)
   */
  imageImportDir: string | undefined;
  /**
   * Registries template builds pull base images from: mirrors, and registries reached over plain HTTP that may
   * resolve to loopback or private addresses. Everything else is HTTPS to public addresses only.
   * @default none, public registries allowed (env BURROW_REGISTRY_MIRRORS, BURROW_INSECURE_REGISTRIES, BURROW_PUBLIC_REGISTRIES)
   */
  registries: RegistryOptions;
  /** Uploaded COPY contexts of template builds (kept in the state directory until collected). */
  uploads: UploadLimits;
  /**
   * How long a sandbox stays paused with its memory before it becomes a filesystem pause (its processes end, its
   * files and address stay; resume cold-boots it). @default 1 hour (env BURROW_MEMORY_PAUSE_MAX_AGE_MS)
   */
  memoryPauseMaxAgeMs: number;
  /**
   * Name servers Burrow's resolver for sandboxes forwards to, `ip[:port]` comma-separated. @default the host's
   * /etc/resolv.conf name servers (env BURROW_DNS_UPSTREAM)
   */
  dnsUpstream: string | undefined;
  /**
   * Services on the host every sandbox reaches by name at `http://<name>/` (egress/host-services.ts); more can be
   * registered at run time (LocalOrchestrator.registerHostService). @default none (env BURROW_HOST_SERVICES,
   * `name=hostPort,…`)
   */
  hostServices: readonly { name: string; hostPort: number; port?: number }[];
  /**
   * Per-sandbox egress limits, enforced by nftables for every sandbox (through the egress proxy or not): new TCP
   * connections per second (past it, refused with a reset) and bytes per second each way on connections the sandbox
   * opened (past it, dropped; envd's traffic is not counted). @default off (env BURROW_EGRESS_CONN_PER_SEC,
   * BURROW_EGRESS_BYTES_PER_SEC)
   */
  egressLimits: EgressLimits;
  /**
   * Who moves the bytes of egress connections spliced unchanged (egress/native-relay.ts): the kernel splice relay
   * (`native`; the JS relay when its addon did not load) or Node streams (`js`, for diagnosis and the benchmark's
   * comparison). Resolved once: the egress proxies take it at start. @default "native" (env BURROW_EGRESS_RELAY)
   */
  egressRelay: RelayKind;
}

export interface EgressLimits {
  connectionsPerSecond?: number | undefined;
  bytesPerSecond?: number | undefined;
}

export interface UploadLimits {
  /** Largest single upload; larger ones are refused with 413. @default 1 GiB (env BURROW_UPLOAD_MAX_BYTES) */
  maxBytes: number;
  /** Uploads kept at once, in progress included. @default 1000 */
  maxCount: number;
  /** Bytes kept at once, in progress included. @default 16 GiB */
  maxTotalBytes: number;
  /** Largest unpacked size of one upload (what its tar headers declare). @default 16 GiB */
  maxUnpackedBytes: number;
  /** Uploads older than this that no running build uses are collected. @default 1 day */
  maxAgeMs: number;
}

export const DEFAULT_STATE_DIR = "/var/lib/burrow";
export const DEFAULT_CACHE_DIR = "/var/cache/burrow";
export const DEFAULT_INSTANCE = "main";
export const DEFAULT_SUBNET = "10.213.0.0/16";
export const DEFAULT_POOL_TEMPLATE = "base";
/** Idle sandboxes kept ready: a create takes one instead of starting a sandbox. */
export const DEFAULT_POOL_SIZE = 2;
export const DEFAULT_POOL_SHELLS = 2;
export const DEFAULT_UID_BASE = 100_000;
export const DEFAULT_UID_COUNT = 65_536;
// Owners and per-sandbox ranges share 0x70000000…0x7FFDFFFF: above the container ranges other tools pick from
// (subordinate ids, systemd-nspawn's 524288…1879048191), below 2^31 (tools that read uids as signed).
/** 4000 owners, so at most 4000 live sandboxes on a host. */
export const DEFAULT_USERNS_OWNERS: UidRange = Object.freeze({ base: 0x7000_0000, count: 4000 });
/** 4000 ranges of 65536 from here end at 0x7FA10000. */
export const DEFAULT_UID_RANGES_BASE = 0x7001_0000;
export const DEFAULT_MEMORY_PAUSE_MAX_AGE_MS = 60 * 60 * 1000;
export const DEFAULT_LIMITS: SandboxLimits = Object.freeze({ cpuCount: 2, memoryMB: 512, diskMB: 4096, pids: 1024 });
export const DEFAULT_UPLOAD_LIMITS: UploadLimits = Object.freeze({
  maxBytes: 2 ** 30,
  maxCount: 1000,
  maxTotalBytes: 16 * 2 ** 30,
  maxUnpackedBytes: 16 * 2 ** 30,
  maxAgeMs: 24 * 60 * 60 * 1000,
});

/** What a caller sets: any field, nested ones in part; the rest comes from the environment and the defaults. */
export type OrchestratorConfigInput = Partial<Omit<OrchestratorConfig, "pool" | "defaultLimits" | "uploads" | "egressLimits">> & {
  egressLimits?: EgressLimits | undefined;
  pool?: Partial<PoolConfig> | undefined;
  defaultLimits?: Partial<SandboxLimits> | undefined;
  uploads?: Partial<UploadLimits> | undefined;
};

/**
 * Validate the input, fill what it leaves out from `env` (the variables named on the fields) and the defaults, and
 * return a frozen config. Input wins over the environment, and a variable that is set but empty counts as unset.
 * `env` is the process's environment as its entry point read it (`burrow up` passes process.env); this package never
 * reads process.env itself, so an embedder that passes none gets the defaults. Resolving a resolved config returns
 * an equal one. Bad values are InvalidArgument BurrowErrors (reason `invalid_config`) naming the field or variable.
 */
export function resolveOrchestratorConfig(input: OrchestratorConfigInput = {}, env: NodeJS.ProcessEnv = {}): Readonly<OrchestratorConfig> {
  const setting = settingOf(env);
  const [instanceSource, instance] = setting("instance", input.instance, "BURROW_INSTANCE") ?? ["instance", DEFAULT_INSTANCE];
  if (!/^[a-z0-9]{1,8}$/.test(instance)) {
    throw configError(`${instanceSource} '${instance}' must be 1-8 characters of [a-z0-9] (it is part of interface names)`);
  }
  const [stateDirSource, stateDir] = setting("stateDir", input.stateDir, "BURROW_STATE_DIR") ?? ["stateDir", DEFAULT_STATE_DIR];
  if (stateDir.trim() === "") throw configError(`${stateDirSource} must not be empty`);
  const [subnetSource, subnet] = setting("subnet", input.subnet, "BURROW_SUBNET") ?? ["subnet", DEFAULT_SUBNET];
  checkSubnet(subnetSource, subnet);
  const poolSize = setting("pool.size", input.pool?.size, "BURROW_POOL_SIZE");
  const resolvedPoolSize = poolSize ? nonNegativeInteger(...poolSize) : DEFAULT_POOL_SIZE;
  const shells = setting("pool.shells", input.pool?.shells, "BURROW_POOL_SHELLS");
  const memoryPauseMaxAge = setting("memoryPauseMaxAgeMs", input.memoryPauseMaxAgeMs, "BURROW_MEMORY_PAUSE_MAX_AGE_MS");
  const uidBase = input.uidBase ?? DEFAULT_UID_BASE;
  const uidCount = input.uidCount ?? DEFAULT_UID_COUNT;
  const usernsOwners = Object.freeze({ ...(input.usernsOwners ?? DEFAULT_USERNS_OWNERS) });
  const overlaps = (a: number, aEnd: number, b: number, bEnd: number) => a < bEnd && b < aEnd;
  const ownersEnd = usernsOwners.base + usernsOwners.count;
  if (
    !Number.isInteger(usernsOwners.base) ||
    !Number.isInteger(usernsOwners.count) ||
    usernsOwners.base < 1 ||
    usernsOwners.count < 1 ||
    ownersEnd > 0xffff_ffff ||
    overlaps(usernsOwners.base, ownersEnd, uidBase, uidBase + uidCount)
  ) {
    throw configError(
      `usernsOwners ${usernsOwners.base}/${usernsOwners.count} must be real host uids outside uidBase/uidCount ${uidBase}/${uidCount}`,
    );
  }
  const uidRangesBase = "uidRangesBase" in input ? input.uidRangesBase : DEFAULT_UID_RANGES_BASE;
  if (uidRangesBase !== undefined) {
    const rangesEnd = uidRangesBase + usernsOwners.count * uidCount;
    if (
      !Number.isInteger(uidRangesBase) ||
      uidRangesBase < 1 ||
      rangesEnd > 0xffff_ffff ||
      overlaps(uidRangesBase, rangesEnd, uidBase, uidBase + uidCount) ||
      overlaps(uidRangesBase, rangesEnd, usernsOwners.base, ownersEnd)
    ) {
      throw configError(
        `uidRangesBase ${uidRangesBase}: ${usernsOwners.count} ranges of ${uidCount} uids must fit below 2^32, clear of uidBase and usernsOwners`,
      );
    }
  }
  return Object.freeze({
    stateDir: isAbsolute(stateDir) ? stateDir : resolve(stateDir),
    cacheDir: input.cacheDir ?? DEFAULT_CACHE_DIR,
    instance,
    subnet,
    uidBase,
    uidCount,
    usernsOwners,
    uidRangesBase,
    pool: Object.freeze({
      template: input.pool?.template ?? DEFAULT_POOL_TEMPLATE,
      size: resolvedPoolSize,
      sizes: poolSizes(input.pool?.sizes, env),
      shells: shells ? nonNegativeInteger(...shells) : resolvedPoolSize > 0 ? DEFAULT_POOL_SHELLS : 0,
    }),
    defaultLimits: Object.freeze({ ...DEFAULT_LIMITS, ...input.defaultLimits }),
    envdReadyTimeoutMs: input.envdReadyTimeoutMs ?? 15_000,
    noNewPrivileges: input.noNewPrivileges ?? false,
    storage: input.storage ?? "btrfs",
    // Present but undefined (as in a resolved config without one) is an explicit "none", like uidRangesBase.
    imageImportDir: "imageImportDir" in input ? input.imageImportDir : setting("imageImportDir", undefined, "BURROW_IMAGE_DIR")?.[1],
    registries: input.registries ?? registriesFromEnv(env),
    memoryPauseMaxAgeMs: memoryPauseMaxAge ? integerOf(...memoryPauseMaxAge, 1) : DEFAULT_MEMORY_PAUSE_MAX_AGE_MS,
    hostServices: Object.freeze([...(input.hostServices ?? hostServicesFromEnv(env["BURROW_HOST_SERVICES"] ?? ""))]),
    dnsUpstream: "dnsUpstream" in input ? input.dnsUpstream : setting("dnsUpstream", undefined, "BURROW_DNS_UPSTREAM")?.[1],
    egressLimits: Object.freeze(egressLimits(input.egressLimits, setting)),
    egressRelay: egressRelay(setting("egressRelay", input.egressRelay, "BURROW_EGRESS_RELAY")),
    uploads: Object.freeze(uploadLimits(input.uploads, setting("uploads.maxBytes", input.uploads?.maxBytes, "BURROW_UPLOAD_MAX_BYTES"))),
  });
}

/** Each limit from the input, else its variable; unset (or 0 in the variable) is off. */
function egressLimits(input: EgressLimits | undefined, setting: ReturnType<typeof settingOf>): EgressLimits {
  const limit = (field: keyof EgressLimits, variable: string) => {
    const given = setting(`egressLimits.${field}`, input?.[field], variable);
    const value = given ? integerOf(...given, 0) : 0;
    return value > 0 ? value : undefined;
  };
  const limits: EgressLimits = {};
  const connections = limit("connectionsPerSecond", "BURROW_EGRESS_CONN_PER_SEC");
  const bytes = limit("bytesPerSecond", "BURROW_EGRESS_BYTES_PER_SEC");
  if (connections !== undefined) limits.connectionsPerSecond = connections;
  if (bytes !== undefined) limits.bytesPerSecond = bytes;
  return limits;
}

const RELAY_KINDS: readonly RelayKind[] = ["native", "js"];

function egressRelay(given: [string, string] | undefined): RelayKind {
  if (given === undefined) return "native";
  const [source, value] = given;
  if (!(RELAY_KINDS as readonly string[]).includes(value)) throw configError(`${source} '${value}' must be one of ${RELAY_KINDS.join(", ")}`);
  return value as RelayKind;
}

/** BURROW_HOST_SERVICES: `name=hostPort` pairs separated by commas. */
function hostServicesFromEnv(spec: string): { name: string; hostPort: number }[] {
  return spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const [name, port, ...rest] = item.split("=").map((s) => s.trim());
      if (!name || port === undefined || rest.length > 0) throw configError(`BURROW_HOST_SERVICES must be name=hostPort pairs separated by commas, got '${spec}'`);
      return { name, hostPort: integerOf(`BURROW_HOST_SERVICES (${name})`, port, 1) };
    });
}

type Setting<T> = [source: string, value: T];

/** Picks an input field, else its variable (set and non-empty), with the name a message about it should use. */
function settingOf(env: NodeJS.ProcessEnv) {
  function setting(field: string, value: string | undefined, variable: string): Setting<string> | undefined;
  function setting(field: string, value: number | undefined, variable: string): Setting<number | string> | undefined;
  function setting(field: string, value: string | number | undefined, variable: string): Setting<string | number> | undefined {
    if (value !== undefined) return [field, value];
    const raw = env[variable];
    return raw === undefined || raw === "" ? undefined : [variable, raw];
  }
  return setting;
}

/** Per-template pool sizes: the input's, else BURROW_POOL_SIZES (`name=N,name=N`), else none. */
function poolSizes(input: Readonly<Record<string, number>> | undefined, env: NodeJS.ProcessEnv): Readonly<Record<string, number>> {
  const sizes: Record<string, number> = {};
  if (input !== undefined) {
    for (const [name, size] of Object.entries(input)) sizes[name] = nonNegativeInteger(`pool.sizes.${name}`, size);
    return Object.freeze(sizes);
  }
  const spec = env["BURROW_POOL_SIZES"] ?? "";
  for (const item of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const [name, count, ...rest] = item.split("=").map((s) => s.trim());
    if (!name || count === undefined || rest.length > 0) {
      throw configError(`BURROW_POOL_SIZES must be template=N pairs separated by commas, got '${spec}'`);
    }
    sizes[name] = nonNegativeInteger(`BURROW_POOL_SIZES (${name})`, count);
  }
  return Object.freeze(sizes);
}

function configError(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_config" });
}

/** A number as given in the input, or a variable's decimal digits; anything else (`1e9`, `2.5`, `-1`) is refused. */
function integerOf(source: string, value: number | string, min: number): number {
  const number = typeof value === "number" ? value : /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min) {
    throw configError(`${source} must be a ${min === 0 ? "non-negative" : "positive"} integer, got ${typeof value === "string" ? `'${value}'` : value}`);
  }
  return number;
}

function nonNegativeInteger(source: string, value: number | string): number {
  return integerOf(source, value, 0);
}

/** The network manager's bounds, checked here so that a bad value stops the start with the name it came by. */
function checkSubnet(source: string, subnet: string): void {
  let prefix: { length: number };
  try {
    prefix = parseCidr(subnet);
  } catch {
    throw configError(`${source} must be an IPv4 CIDR (a.b.c.d/n), got '${subnet}'`);
  }
  if (prefix.length < 12 || prefix.length > 30) throw configError(`${source} must be a prefix from /12 to /30, got '${subnet}'`);
}

function registriesFromEnv(env: NodeJS.ProcessEnv): RegistryOptions {
  // Set-but-empty variables count as unset here too.
  const set = Object.fromEntries(
    ["BURROW_REGISTRY_MIRRORS", "BURROW_INSECURE_REGISTRIES", "BURROW_PUBLIC_REGISTRIES"].flatMap((name) => (env[name] ? [[name, env[name]]] : [])),
  );
  try {
    return registryOptionsFromEnv(set);
  } catch (error) {
    throw new BurrowError(Code.InvalidArgument, error instanceof Error ? error.message : String(error), { reason: "invalid_config", cause: error });
  }
}

function uploadLimits(input: Partial<UploadLimits> | undefined, maxBytes: Setting<number | string> | undefined): UploadLimits {
  const limits: Record<string, number> = {};
  for (const key of Object.keys(DEFAULT_UPLOAD_LIMITS) as (keyof UploadLimits)[]) {
    const [source, value] = key === "maxBytes" && maxBytes ? maxBytes : [`uploads.${key}`, input?.[key] ?? DEFAULT_UPLOAD_LIMITS[key]];
    limits[key] = integerOf(source, value, 1);
  }
  return limits as unknown as UploadLimits;
}

/** Paths inside the state directory, in one place. */
export function statePaths(stateDir: string) {
  return {
    layers: join(stateDir, "layers"),
    templates: join(stateDir, "templates"),
    runtime: join(stateDir, "runtime"),
    sandboxes: join(stateDir, "sandboxes"),
    sandbox: (id: string) => join(stateDir, "sandboxes", id),
  };
}
