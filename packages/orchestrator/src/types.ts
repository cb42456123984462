// Contracts between the orchestrator's parts. The Orchestrator composes them; each part has one job.
import type { EgressRules } from "./network/egress-rules.js";
import type { NetPlumbing } from "./network/net-plumbing.js";

/** Resource limits of one sandbox. */
export interface SandboxLimits {
  /** CPU cores the sandbox may use (CFS quota = cpuCount × period). */
  cpuCount: number;
  /** Memory limit in MiB; the kernel OOM-kills inside the sandbox at the limit. */
  memoryMB: number;
  /** Size of the sandbox's writable layer in MiB. */
  diskMB: number;
  /** Maximum number of processes and threads. */
  pids: number;
}

/** Cgroups of one sandbox, on whatever layout the host has (v1, v2 or hybrid). */
export interface SandboxCgroup {
  readonly sandboxId: string;
  /** Every cgroup directory the sandbox's processes must join (one per v1 hierarchy, or one v2 dir). */
  readonly procsPaths: readonly string[];
  setLimits(limits: SandboxLimits): Promise<void>;
  /** Pids currently in the sandbox's cgroup. */
  pids(): Promise<number[]>;
  freeze(signal?: AbortSignal): Promise<void>;
  thaw(signal?: AbortSignal): Promise<void>;
  /** Kill every process in the cgroup and wait until it is empty. */
  killAll(signal?: AbortSignal): Promise<void>;
  /** Remove the cgroup directories (after killAll). Missing dirs are not an error. */
  destroy(): Promise<void>;
  sample(): Promise<CgroupSample>;
}

export interface CgroupSample {
  /** Cumulative CPU time in nanoseconds. */
  cpuUsageNs: number;
  memoryUsedBytes: number;
  memoryCacheBytes: number;
  memoryLimitBytes: number;
  /** Processes the kernel's OOM killer killed in the cgroup so far (memory.events / memory.oom_control `oom_kill`). */
  oomKills: number;
}

export interface CgroupManager {
  /** Create (or re-open, when it exists) the cgroups of a sandbox. */
  open(sandboxId: string): Promise<SandboxCgroup>;
  /** Ids of every sandbox cgroup this instance owns, for re-adoption and orphan reaping. */
  list(): Promise<string[]>;
  /** Remove the instance's parent cgroups when they are empty. */
  close(): Promise<void>;
}

/** Network attachment of one sandbox: a veth pair from its network namespace to the instance bridge. */
export interface SandboxNetwork {
  readonly sandboxId: string;
  readonly ip: string;
  readonly hostVeth: string;
  setInternetAccess(allowed: boolean): Promise<void>;
  /**
   * Replace the internet switch and the allowOut/denyOut rules (IPv4 addresses and CIDRs) in one firewall
   * transaction; on failure the old ones stay. Empty rules remove the sandbox's own chain.
   */
  setEgress(allowInternetAccess: boolean, rules: EgressRules, signal?: AbortSignal): Promise<void>;
  /** Remove the veth (if still there), firewall set elements and the address lease. */
  release(): Promise<void>;
  /**
   * Remove the veth (if still there) and the bridge's neighbour entry, keeping the lease and the firewall elements:
   * a filesystem-paused sandbox keeps its address for its next boot (reserve with `ip`) at the cost of set elements.
   */
  unplug(): Promise<void>;
}

/** An address and firewall elements reserved for a sandbox whose veth the launcher is to plumb. */
export interface NetworkReservation {
  /** What the launcher needs to plumb the veth (`--net-*` options). */
  readonly plumbing: NetPlumbing;
  /** The attachment; release() undoes the reservation and removes the veth once it exists. */
  readonly network: SandboxNetwork;
  /** Settles once the firewall elements are installed (nothing reaches the sandbox before); on failure the caller
   *  releases the reservation, after this has settled. */
  readonly firewall: Promise<void>;
}

export interface NetworkManager {
  /** Create bridge, firewall tables and NAT (idempotent). Fails with a clear error if the subnet overlaps a host route. */
  setup(signal?: AbortSignal): Promise<void>;
  /**
   * Reserve an address at once and start installing its firewall elements, for a sandbox the launcher will plumb:
   * a fresh one, or with `ip` the sandbox's own again (a cold boot: the lease it still holds, or after a restart
   * the lease taken back; refused when another sandbox holds it).
   */
  reserve(
    sandboxId: string,
    opts: { allowInternetAccess: boolean; ip?: string | undefined; egress?: EgressRules | undefined; signal?: AbortSignal },
  ): NetworkReservation;
  /** Attach the network namespace of `pid` (made elsewhere) to the bridge with a fresh address. */
  attach(sandboxId: string, pid: number, opts: { allowInternetAccess: boolean; signal?: AbortSignal }): Promise<SandboxNetwork>;
  /** Re-adopt an attachment after a server restart (no kernel changes, only bookkeeping). */
  adopt(sandboxId: string, ip: string, hostVeth: string, allowInternetAccess: boolean, egress?: EgressRules): SandboxNetwork;
  /** Delete veths and firewall entries of this instance that belong to no live sandbox (after a crash). */
  reapOrphans(liveSandboxIds: Iterable<string>, signal?: AbortSignal): Promise<string[]>;
  /** Remove bridge, firewall tables and NAT rules. Called when the instance is torn down for good. */
  teardown(): Promise<void>;
}
