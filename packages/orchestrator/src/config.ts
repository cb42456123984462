import { join } from "node:path";
import type { SandboxLimits } from "./types.js";
import { registryOptionsFromEnv, type RegistryOptions } from "./templates/bases/registry/registry-options.js";

export interface PoolConfig {
  /** Template alias or id the pool keeps ready. */
  template: string;
  /** Number of idle sandboxes kept ready; 0 disables the pool. */
  size: number;
}

/** A range of host uids: base … base+count-1. */
export interface UidRange {
  base: number;
  count: number;
}

export interface OrchestratorConfig {
  /** Root of everything the orchestrator keeps: layers, templates, runtime, sandboxes. */
  stateDir: string;
  /** Where finished base-template builds are cached across state directories. */
  cacheDir: string;
  /** Short name that keeps several instances apart on one host (cgroups, bridge, nft tables). */
  instance: string;
  /** IPv4 subnet for sandbox addresses, CIDR. */
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
   * the state or cache directory are refused whatever it is. @default env BURROW_IMAGE_DIR, else unset
   */
  imageImportDir: string | undefined;
  /**
   * Registries template builds pull base images from: mirrors, and registries reached over plain HTTP that may
   * resolve to loopback or private addresses. Everything else is HTTPS to public addresses only.
   * @default env BURROW_REGISTRY_MIRRORS and BURROW_INSECURE_REGISTRIES, else none
   */
  registries: RegistryOptions;
  /** Uploaded COPY contexts of template builds (kept in the state directory until collected). */
  uploads: UploadLimits;
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
export const DEFAULT_SUBNET = "10.213.0.0/16";
export const DEFAULT_UID_BASE = 100_000;
export const DEFAULT_UID_COUNT = 65_536;
// Owners and per-sandbox ranges share 0x70000000…0x7FFDFFFF: above the container ranges other tools pick from
// (subordinate ids, systemd-nspawn's 524288…1879048191), below 2^31 (tools that read uids as signed).
/** 4000 owners, so at most 4000 live sandboxes on a host. */
export const DEFAULT_USERNS_OWNERS: UidRange = Object.freeze({ base: 0x7000_0000, count: 4000 });
/** 4000 ranges of 65536 from here end at 0x7FA10000. */
export const DEFAULT_UID_RANGES_BASE = 0x7001_0000;
export const DEFAULT_LIMITS: SandboxLimits = Object.freeze({ cpuCount: 2, memoryMB: 512, diskMB: 4096, pids: 1024 });
export const DEFAULT_UPLOAD_LIMITS: UploadLimits = Object.freeze({
  maxBytes: 2 ** 30,
  maxCount: 1000,
  maxTotalBytes: 16 * 2 ** 30,
  maxUnpackedBytes: 16 * 2 ** 30,
  maxAgeMs: 24 * 60 * 60 * 1000,
});

export function resolveOrchestratorConfig(input: Partial<OrchestratorConfig> = {}): Readonly<OrchestratorConfig> {
  const instance = input.instance ?? "main";
  if (!/^[a-z0-9]{1,8}$/.test(instance)) {
    throw new Error(`instance '${instance}' must be 1-8 characters of [a-z0-9] (it is part of interface names)`);
  }
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
    throw new Error(
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
      throw new Error(
        `uidRangesBase ${uidRangesBase}: ${usernsOwners.count} ranges of ${uidCount} uids must fit below 2^32, clear of uidBase and usernsOwners`,
      );
    }
  }
  return Object.freeze({
    stateDir: input.stateDir ?? DEFAULT_STATE_DIR,
    cacheDir: input.cacheDir ?? DEFAULT_CACHE_DIR,
    instance,
    subnet: input.subnet ?? DEFAULT_SUBNET,
    uidBase,
    uidCount,
    usernsOwners,
    uidRangesBase,
    pool: Object.freeze({ template: "base", size: 0, ...input.pool }),
    defaultLimits: Object.freeze({ ...DEFAULT_LIMITS, ...input.defaultLimits }),
    envdReadyTimeoutMs: input.envdReadyTimeoutMs ?? 15_000,
    noNewPrivileges: input.noNewPrivileges ?? false,
    storage: input.storage ?? "btrfs",
    imageImportDir: input.imageImportDir ?? (process.env.BURROW_IMAGE_DIR || undefined),
    registries: input.registries ?? registryOptionsFromEnv(process.env),
    uploads: Object.freeze(uploadLimits(input.uploads)),
  });
}

function uploadLimits(input: Partial<UploadLimits> | undefined): UploadLimits {
  const env = process.env.BURROW_UPLOAD_MAX_BYTES;
  const limits = { ...DEFAULT_UPLOAD_LIMITS, ...(env ? { maxBytes: Number(env) } : {}), ...input };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`uploads.${name} must be a positive integer, got ${value}`);
  }
  return limits;
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
