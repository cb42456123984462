// Per-team quotas, on top of the host-wide floor in admission/ (which still decides whether the host can take a
// sandbox): a team may be refused although the host has room, never the reverse. Usage is counted from the store
// (running sandboxes of the team) plus admissions still in flight, so concurrent creates cannot both slip under a
// limit. A refusal is 429 in E2B's shape, naming the quota, the usage and the limit. 0 means unlimited. On a node of a
// cluster, a team with a limit of what is counted across nodes is admitted through the cluster's ledger
// (`SharedQuotaLedger`, cluster/team-ledger.ts) instead of this node's in-flight list and start times: its holds and
// starts are every node's, checked and written at once, so two nodes cannot both pass one limit.
import { BurrowError, Code } from "@burrow/protocol";

export interface TeamQuotaValues {
  /** Running sandboxes at once (paused ones do not count). */
  maxRunningSandboxes: number;
  /** Sum of running sandboxes' vCPUs. */
  maxVcpu: number;
  /** Sum of running sandboxes' memory, MiB. */
  maxMemoryMB: number;
  /** Disk of one sandbox, MiB. */
  maxDiskMBPerSandbox: number;
  /** Sum of the disk limits of the team's sandboxes (running and paused) and volumes, MiB. */
  maxDiskMB: number;
  /** Longest timeout (lifetime) a create, connect or setTimeout may ask for, seconds. */
  maxTimeoutSec: number;
  /** Template builds running at once. */
  maxConcurrentBuilds: number;
  /** Sandboxes started (created, forked, branched) per minute. */
  createsPerMinute: number;
}

export type TeamQuotaOverrides = Partial<TeamQuotaValues>;

export const QUOTA_NAMES = [
  "maxRunningSandboxes", "maxVcpu", "maxMemoryMB", "maxDiskMBPerSandbox", "maxDiskMB", "maxTimeoutSec", "maxConcurrentBuilds", "createsPerMinute",
] as const satisfies readonly (keyof TeamQuotaValues)[];

/** Environment variables of the defaults every team gets unless overridden (PATCH /burrow/v1/teams/{id}). */
export const QUOTA_ENV: Readonly<Record<keyof TeamQuotaValues, string>> = {
  maxRunningSandboxes: "BURROW_TEAM_MAX_RUNNING_SANDBOXES",
  maxVcpu: "BURROW_TEAM_MAX_VCPU",
  maxMemoryMB: "BURROW_TEAM_MAX_MEMORY_MB",
  maxDiskMBPerSandbox: "BURROW_TEAM_MAX_DISK_MB_PER_SANDBOX",
  maxDiskMB: "BURROW_TEAM_MAX_DISK_MB",
  maxTimeoutSec: "BURROW_TEAM_MAX_TIMEOUT_SEC",
  maxConcurrentBuilds: "BURROW_TEAM_MAX_CONCURRENT_BUILDS",
  createsPerMinute: "BURROW_TEAM_CREATES_PER_MINUTE",
};

export const UNLIMITED_QUOTAS: TeamQuotaValues = {
  maxRunningSandboxes: 0, maxVcpu: 0, maxMemoryMB: 0, maxDiskMBPerSandbox: 0, maxDiskMB: 0, maxTimeoutSec: 0, maxConcurrentBuilds: 0, createsPerMinute: 0,
};

/** The configured defaults: explicit values first, then BURROW_TEAM_* variables; unlimited when neither is set. */
export function resolveQuotaDefaults(input: TeamQuotaOverrides = {}, env: NodeJS.ProcessEnv = {}): TeamQuotaValues {
  const out = { ...UNLIMITED_QUOTAS };
  for (const name of QUOTA_NAMES) {
    const raw = input[name] ?? env[QUOTA_ENV[name]];
    if (raw === undefined || raw === "") continue;
    const value = typeof raw === "number" ? raw : Number(raw);
    if (!Number.isInteger(value) || value < 0) {
      throw new BurrowError(Code.InvalidArgument, `${input[name] !== undefined ? `teamQuotas.${name}` : QUOTA_ENV[name]} must be a non-negative integer (0 = unlimited), got "${raw}"`);
    }
    out[name] = value;
  }
  return out;
}

/** Validate a PATCH body's quotas: known names, non-negative integers, or null to return to the default. */
export function parseQuotaPatch(body: unknown, current: TeamQuotaOverrides): TeamQuotaOverrides {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new BurrowError(Code.InvalidArgument, "quotas must be an object");
  const next: TeamQuotaOverrides = { ...current };
  for (const [name, value] of Object.entries(body)) {
    if (!(QUOTA_NAMES as readonly string[]).includes(name)) {
      throw new BurrowError(Code.InvalidArgument, `unknown quota "${name}"; known: ${QUOTA_NAMES.join(", ")}`);
    }
    const key = name as keyof TeamQuotaValues;
    if (value === null) delete next[key];
    else if (Number.isInteger(value) && (value as number) >= 0) next[key] = value as number;
    else throw new BurrowError(Code.InvalidArgument, `quota ${name} must be a non-negative integer (0 = unlimited) or null (the default), got ${JSON.stringify(value)}`);
  }
  return next;
}

export interface TeamUsage {
  runningSandboxes: number;
  vcpu: number;
  memoryMB: number;
  /**
   * Disk limits the team holds, MiB: every sandbox it has (running or paused: a paused one keeps its writable layer)
   * and every volume.
   */
  diskMB: number;
}

export const NO_USAGE: Readonly<TeamUsage> = Object.freeze({ runningSandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: 0 });

export interface SandboxAsk {
  count: number;
  cpuCount: number;
  memoryMB: number;
  diskMB: number;
  /** Lifetime asked for, seconds (undefined: the server default, checked against the quota too). */
  timeoutSec: number;
  /** Whether these are new sandboxes (counted by the create rate) or resumed ones. */
  kind: "new" | "resume";
}

export interface QuotaReservation {
  /** End it: `sandboxIds`, what the request made (a shared hold keeps counting them until every node does). */
  release(sandboxIds?: readonly string[]): void;
  /** The shared hold's id, for a create placed on another node to hand over (cluster/quota-hold.ts). */
  readonly holdId?: string;
}

/** What a shared hold counts (cluster/team-ledger.ts's Held). */
export interface SharedHeld {
  sandboxes: number;
  vcpu: number;
  memoryMB: number;
  diskMB: number;
  builds: number;
}

/** Holds and starts of a team on every node of a cluster, written with a revision check (cluster/team-ledger.ts). */
export interface SharedQuotaLedger {
  reserve(
    teamId: string,
    held: SharedHeld,
    starts: number,
    check: (view: { held: SharedHeld; starts: number; volumesMB: number }) => void,
    options: { takeOver?: string | undefined; ttlMs?: number | undefined; signal?: AbortSignal | undefined },
  ): Promise<{ id: string; settle(sandboxIds: readonly string[], volumesMB?: number): Promise<void> }>;
  /** This node's volumes of a team (MiB), for the other nodes' disk totals. Never throws. */
  setVolumes(teamId: string, volumesMB: number): Promise<void>;
}

/** Limits counted across the nodes of a cluster: a team with one of them set is admitted through the ledger. */
const SHARED_LIMITS = ["maxRunningSandboxes", "maxVcpu", "maxMemoryMB", "maxDiskMB", "createsPerMinute"] as const;

/** A build holds its place in the ledger while it runs; past this, only its node's being up keeps it (a safety net). */
const BUILD_HOLD_MS = 6 * 3600_000;

export interface TeamQuotasDeps {
  defaults: TeamQuotaValues;
  overrides: (teamId: string) => TeamQuotaOverrides;
  usage: (teamId: string) => TeamUsage;
  /** Builds of the team still running. */
  runningBuilds: (teamId: string) => number;
  /** On a node of a cluster: the team ledger every node writes its admissions into. */
  ledger?: SharedQuotaLedger | undefined;
  /** MiB of the team's volumes on this node (written into the ledger for the other nodes). */
  localVolumesMB?: ((teamId: string) => number) | undefined;
  now?: () => number;
}

const RATE_WINDOW_MS = 60_000;

export class TeamQuotas {
  readonly #d: TeamQuotasDeps;
  /** Admitted but not yet in the store, per team. */
  readonly #inFlight = new Map<string, TeamUsage[]>();
  /** Start times within the last minute, per team. */
  readonly #starts = new Map<string, number[]>();

  constructor(deps: TeamQuotasDeps) {
    this.#d = deps;
  }

  effective(teamId: string): TeamQuotaValues {
    return { ...this.#d.defaults, ...this.#d.overrides(teamId) };
  }

  /** Usage now: the store's running sandboxes plus admissions in flight. */
  usage(teamId: string): TeamUsage {
    const u = { ...this.#d.usage(teamId) };
    for (const f of this.#inFlight.get(teamId) ?? []) {
      u.runningSandboxes += f.runningSandboxes;
      u.vcpu += f.vcpu;
      u.memoryMB += f.memoryMB;
      u.diskMB += f.diskMB;
    }
    return u;
  }

  /** Starts in the last minute. */
  startRate(teamId: string): number {
    return this.#recentStarts(teamId).length;
  }

  /** Check the timeout alone (setTimeout, connect of a running sandbox). */
  checkTimeout(teamId: string, timeoutSec: number): void {
    const q = this.effective(teamId);
    if (q.maxTimeoutSec > 0 && timeoutSec > q.maxTimeoutSec) {
      refuse("maxTimeoutSec", `sandbox timeout ${timeoutSec} s exceeds your team's limit of ${q.maxTimeoutSec} s`);
    }
  }

  /** Admit sandboxes for a team, holding their place until `release` (call it once they are in the store or failed). */
  admit(teamId: string, ask: SandboxAsk): QuotaReservation {
    const q = this.effective(teamId);
    const u = this.usage(teamId);
    this.#checkSize(teamId, q, ask);
    const starts = this.#recentStarts(teamId);
    const newDisk = this.#checkUsage(q, u, ask, starts.length);
    if (ask.kind === "new") {
      const now = this.#now();
      for (let i = 0; i < ask.count; i++) starts.push(now);
    }
    return this.#hold(teamId, { runningSandboxes: ask.count, vcpu: ask.count * ask.cpuCount, memoryMB: ask.count * ask.memoryMB, diskMB: newDisk });
  }

  /**
   * `admit`, through the cluster's ledger when there is one and the team has a limit counted across nodes: usage is
   * this node's store and the other nodes' owner records (never this node's in-flight list) plus every node's holds,
   * starts are every node's. `takeOver`: the hold of the node that placed this create here, replaced by this one.
   */
  async admitShared(teamId: string, ask: SandboxAsk, takeOver?: string, signal?: AbortSignal): Promise<QuotaReservation> {
    const q = this.effective(teamId);
    const ledger = this.#d.ledger;
    if (!ledger || !SHARED_LIMITS.some((name) => q[name] > 0)) return this.admit(teamId, ask);
    this.#checkSize(teamId, q, ask);
    const newDisk = ask.kind === "new" ? ask.count * ask.diskMB : 0;
    const held = { sandboxes: ask.count, vcpu: ask.count * ask.cpuCount, memoryMB: ask.count * ask.memoryMB, diskMB: newDisk, builds: 0 };
    // A create placed here was counted as a start by the node that placed it.
    const starts = ask.kind === "new" && takeOver === undefined ? ask.count : 0;
    const hold = await ledger.reserve(teamId, held, starts, (view) => {
      const u = this.usage(teamId);
      u.runningSandboxes += view.held.sandboxes;
      u.vcpu += view.held.vcpu;
      u.memoryMB += view.held.memoryMB;
      u.diskMB += view.held.diskMB + view.volumesMB;
      // The starts of a create placed here are in the view already (the placing node wrote them).
      this.#checkUsage(q, u, ask, view.starts - (ask.kind === "new" && takeOver !== undefined ? ask.count : 0));
    }, { takeOver, signal });
    return { holdId: hold.id, release: (sandboxIds = []) => void hold.settle(sandboxIds) };
  }

  /** Sizes and lifetime, which need no usage. */
  #checkSize(teamId: string, q: TeamQuotaValues, ask: SandboxAsk): void {
    this.checkTimeout(teamId, ask.timeoutSec);
    if (q.maxDiskMBPerSandbox > 0 && ask.diskMB > q.maxDiskMBPerSandbox) {
      refuse("maxDiskMBPerSandbox", `sandbox disk ${ask.diskMB} MiB exceeds your team's limit of ${q.maxDiskMBPerSandbox} MiB per sandbox`);
    }
  }

  /** Usage limits and the create rate (`started`: starts in the last minute); returns the new disk the ask takes. */
  #checkUsage(q: TeamQuotaValues, u: TeamUsage, ask: SandboxAsk, started: number): number {
    if (q.maxRunningSandboxes > 0 && u.runningSandboxes + ask.count > q.maxRunningSandboxes) {
      refuse("maxRunningSandboxes", `your team has ${u.runningSandboxes} running sandboxes and may run ${q.maxRunningSandboxes} at once (asked for ${ask.count} more)`);
    }
    if (q.maxVcpu > 0 && u.vcpu + ask.count * ask.cpuCount > q.maxVcpu) {
      refuse("maxVcpu", `your team's running sandboxes use ${u.vcpu} vCPUs of ${q.maxVcpu} (asked for ${ask.count * ask.cpuCount} more)`);
    }
    if (q.maxMemoryMB > 0 && u.memoryMB + ask.count * ask.memoryMB > q.maxMemoryMB) {
      refuse("maxMemoryMB", `your team's running sandboxes use ${u.memoryMB} MiB of memory of ${q.maxMemoryMB} MiB (asked for ${ask.count * ask.memoryMB} MiB more)`);
    }
    // A resumed sandbox's disk is already counted: it kept it while paused.
    const newDisk = ask.kind === "new" ? ask.count * ask.diskMB : 0;
    if (q.maxDiskMB > 0 && newDisk > 0 && u.diskMB + newDisk > q.maxDiskMB) {
      refuse("maxDiskMB", `your team's sandboxes and volumes hold ${u.diskMB} MiB of disk of ${q.maxDiskMB} MiB (asked for ${newDisk} MiB more)`);
    }
    if (ask.kind === "new" && q.createsPerMinute > 0 && started + ask.count > q.createsPerMinute) {
      refuse("createsPerMinute", `your team started ${started} sandboxes in the last minute and may start ${q.createsPerMinute} per minute`);
    }
    return newDisk;
  }

  /** Admit a new volume of `sizeMB` against the team's disk total, holding its place until `release`. */
  admitVolume(teamId: string, sizeMB: number): QuotaReservation {
    const q = this.effective(teamId);
    const u = this.usage(teamId);
    if (q.maxDiskMB > 0 && u.diskMB + sizeMB > q.maxDiskMB) {
      refuse("maxDiskMB", `your team's sandboxes and volumes hold ${u.diskMB} MiB of disk of ${q.maxDiskMB} MiB (a volume takes ${sizeMB} MiB)`);
    }
    return this.#hold(teamId, { ...NO_USAGE, diskMB: sizeMB });
  }

  /**
   * `admitVolume` across a cluster: with a disk limit, a hold checked against usage, every node's holds and the other
   * nodes' volumes; released with this node's new volume total in the same write. Without one, the total is written
   * once the request ends, for when the team gets a limit.
   */
  async admitVolumeShared(teamId: string, sizeMB: number, signal?: AbortSignal): Promise<QuotaReservation> {
    const q = this.effective(teamId);
    const ledger = this.#d.ledger;
    const volumesNow = () => this.#d.localVolumesMB?.(teamId) ?? 0;
    if (!ledger) return this.admitVolume(teamId, sizeMB);
    if (q.maxDiskMB <= 0) {
      const local = this.admitVolume(teamId, sizeMB);
      return { release: () => (local.release(), void ledger.setVolumes(teamId, volumesNow())) };
    }
    const hold = await ledger.reserve(teamId, { sandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: sizeMB, builds: 0 }, 0, (view) => {
      const held = this.usage(teamId).diskMB + view.held.diskMB + view.volumesMB;
      if (held + sizeMB > q.maxDiskMB) refuse("maxDiskMB", `your team's sandboxes and volumes hold ${held} MiB of disk of ${q.maxDiskMB} MiB (a volume takes ${sizeMB} MiB)`);
    }, { signal });
    return { holdId: hold.id, release: () => void hold.settle([], volumesNow()) };
  }

  /** This node's volumes of a team changed (one deleted): the other nodes' disk totals follow. */
  volumesChanged(teamId: string): void {
    void this.#d.ledger?.setVolumes(teamId, this.#d.localVolumesMB?.(teamId) ?? 0);
  }

  #hold(teamId: string, held: TeamUsage): QuotaReservation {
    const list = this.#inFlight.get(teamId) ?? [];
    list.push(held);
    this.#inFlight.set(teamId, list);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const current = this.#inFlight.get(teamId) ?? [];
        const i = current.indexOf(held);
        if (i >= 0) current.splice(i, 1);
        if (current.length === 0) this.#inFlight.delete(teamId);
      },
    };
  }

  /**
   * `admitBuild` across a cluster: a hold in the ledger for the build, counted by every node while the build runs
   * (release it when the build ends; its node going down ends it too). Undefined when no ledger or no build limit.
   */
  async admitBuildShared(teamId: string, signal?: AbortSignal): Promise<QuotaReservation | undefined> {
    const q = this.effective(teamId);
    const ledger = this.#d.ledger;
    if (!ledger || q.maxConcurrentBuilds <= 0) {
      this.admitBuild(teamId);
      return undefined;
    }
    const hold = await ledger.reserve(teamId, { sandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: 0, builds: 1 }, 0, (view) => {
      if (view.held.builds >= q.maxConcurrentBuilds) {
        refuse("maxConcurrentBuilds", `your team has ${view.held.builds} template builds running and may run ${q.maxConcurrentBuilds} at once`);
      }
    }, { ttlMs: BUILD_HOLD_MS, signal });
    return { holdId: hold.id, release: () => void hold.settle([]) };
  }

  /** A template build may start for the team. */
  admitBuild(teamId: string): void {
    const q = this.effective(teamId);
    const running = this.#d.runningBuilds(teamId);
    if (q.maxConcurrentBuilds > 0 && running >= q.maxConcurrentBuilds) {
      refuse("maxConcurrentBuilds", `your team has ${running} template builds running and may run ${q.maxConcurrentBuilds} at once`);
    }
  }

  #recentStarts(teamId: string): number[] {
    const cutoff = this.#now() - RATE_WINDOW_MS;
    const kept = (this.#starts.get(teamId) ?? []).filter((t) => t > cutoff);
    this.#starts.set(teamId, kept);
    return kept;
  }

  #now(): number {
    return this.#d.now?.() ?? Date.now();
  }
}

function refuse(quota: keyof TeamQuotaValues, message: string): never {
  throw new BurrowError(Code.ResourceExhausted, `team quota ${quota} reached: ${message}`, { reason: `team_quota_${quota}` });
}
