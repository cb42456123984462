// What the control plane sees of an orchestrator. Implemented in-process for one machine
// (LocalOrchestrator); a NATS request/reply client can implement the same interface for many.
import type { EgressRecord } from "./egress/egress-audit.js";
import type { EgressInterceptor } from "./egress/header-relay.js";
import type { UpstreamProxy } from "./egress/upstream-proxy.js";
import type { EgressProxying } from "./network/egress-rules.js";
import type { SandboxLimits } from "./types.js";

export type SandboxState = "running" | "paused";

/**
 * How a paused sandbox is paused. "memory": its processes are frozen where they are, with their memory, network
 * namespace and cgroups (resume continues them). "filesystem": its processes ended and everything but its files and
 * its address was released (resume cold-boots it: init, envd and the template's start command run again, with a
 * new boot id). A memory pause becomes a filesystem pause past an age limit or when its processes did not survive
 * a host reboot.
 */
export type PauseKind = "memory" | "filesystem";

/** Something that happened to a sandbox without a caller asking for it, for the control plane to record and publish. */
export type SandboxLifecycleEvent = {
  type: "pause_converted";
  sandboxId: string;
  from: "memory";
  to: "filesystem";
  /** "age": paused with memory longer than the limit; "host_restart": its processes were gone at start. */
  reason: "age" | "host_restart";
  at: Date;
};

/** A template as the control plane sees it: an id, its names and the defaults sandboxes inherit. */
export interface TemplateInfo {
  templateId: string;
  /** Names (aliases) this template is reachable by, e.g. "base". */
  aliases: string[];
  defaults: SandboxLimits;
  createdAt: Date;
  /**
   * A snapshot's: the egress of its sandbox when it was taken. A control plane starts sandboxes of the snapshot with
   * it unless their create sets egress of its own, so that a copy of a restricted sandbox is restricted too.
   */
  egress?: SandboxEgress;
}

/** A live sandbox as the orchestrator knows it. */
export interface SandboxRecord {
  sandboxId: string;
  templateId: string;
  /** Address of the sandbox reachable from the host (its veth IP). The gateway proxies `<address>:<port>`. */
  address: string;
  limits: SandboxLimits;
  allowInternetAccess: boolean;
  startedAt: Date;
  /** "paused" while paused (pauseSandbox); paused sandboxes stay until killed. */
  state: SandboxState;
  /** While paused: how, and since when. */
  pause?: { kind: PauseKind; since: Date };
  /** Volumes bound into it (absent: none). */
  volumeMounts?: VolumeMount[];
  /** The sandbox's /proc/sys/kernel/random/boot_id: new at every (cold) boot, kept by a memory pause and resume. */
  bootId?: string;
  /**
   * Set by createSandbox: claimed from a pool of its template, a prepared sandbox given the template's root
   * (`shell`), or launched for this create.
   */
  createdFrom?: "pool" | "shell" | "launch";
  /** Set by createSandbox when the template has a pool and none of its sandboxes was ready (the create launched one). */
  poolEmpty?: boolean;
}

export interface CreateSandboxOptions {
  /** Template id or alias (`base`, `base:latest`, an id). */
  template: string;
  /** Limits; fields left out come from the template's defaults. */
  limits?: Partial<SandboxLimits>;
  allowInternetAccess: boolean;
  /** Environment variables every process in the sandbox gets (E2B `envVars`). */
  envVars: Record<string, string>;
  /** Token envd requires in `X-Access-Token` and uses for signed URLs. */
  envdAccessToken: string;
  /**
   * allowOut/denyOut (and proxied) enforced, with allowInternetAccess, before the sandbox is handed out
   * (malformed entries are InvalidArgument). Absent: none, except that a checkpoint's child keeps its checkpoint's.
   */
  egress?: EgressRuleLists;
  /**
   * Volumes (createVolume) bound read-write into the sandbox, each at its absolute path, for as long as it lives
   * (cold boots included). A pooled sandbox gets them bound in before the create returns; when that fails it is
   * killed and the create launches one with them instead.
   */
  volumeMounts?: VolumeMount[];
  /** One of many creates made at once (a fork's children): refills of the prepared sandboxes wait a moment. */
  inBurst?: boolean;
  signal?: AbortSignal;
}

/** A volume's files on the orchestrator's host. */
export interface VolumeHost {
  dir: string;
  uidBase: number;
  uidCount: number;
}

/** A volume bound into a sandbox: the volume's id and the absolute path it appears at inside. */
export interface VolumeMount {
  volumeId: string;
  path: string;
}

/** A sandbox's allowOut/denyOut lists (IPv4 addresses, CIDRs and domains), without its internet switch. */
export interface EgressRuleLists {
  allowOut: string[];
  denyOut: string[];
  /**
   * What of its TCP goes through the egress proxy beyond what domain entries send there (EgressProxying): "inspect"
   * for a sandbox with header transforms, "tunnel" for one whose egress goes through its user's proxy. Absent: "none".
   */
  proxied?: EgressProxying;  /** TCP ports beyond 80/443 the egress proxy takes too (header transforms for `host:port`); absent: none. */
  inspectPorts?: number[];
}

export interface SandboxMetricSample {
  timestamp: Date;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  memCache: number;
  diskUsed: number;
  diskTotal: number;
  /**
   * What the disk limit counts (btrfs referenced bytes of the sandbox's subvolume: its files, their metadata, envd's
   * log) as of btrfs's last commit; writes fail with EDQUOT once it reaches diskTotal. Absent without btrfs.
   */
  diskLimitUsed?: number;
  /** Each mounted volume's use of its size limit, as diskLimitUsed (absent: no volumes, or no btrfs). */
  volumeLimits?: Array<{ volumeId: string; usedBytes: number; limitBytes: number }>;
  /** Processes the OOM killer killed in the sandbox since it started (0 when unknown or halted). */
  oomKills?: number;
}

export type SandboxExitReason = "killed" | "crashed";

/**
 * A snapshot: a template made from a sandbox's files at one moment (its writable layer on top of the layers the
 * sandbox started from). `createSandbox({ template: snapshotId })` starts a sandbox with those files. Running
 * processes and memory are not part of it (checkpointing them with CRIU does not work on these kernels).
 */
export interface SnapshotInfo {
  snapshotId: string;
  /** Names it is reachable by, besides its id (the name given at creation). */
  names: string[];
  /** The sandbox it was taken from. */
  sandboxId: string;
  createdAt: Date;
  /** Who it is charged to (SnapshotQuota.owner); absent for snapshots taken without a quota. */
  owner?: string;
  /** Disk space its layer holds, as charged to the owner (du: allocated blocks, reflinked extents in full). */
  sizeBytes?: number;
}

/**
 * Who a snapshot is charged to and the limits it must fit in: the control plane's policy, enforced where the
 * bytes are. Refusals are BurrowErrors with code ResourceExhausted and reason "snapshot_storage" (the owner's
 * bytes) or "snapshot_count" (snapshots of one sandbox).
 */
export interface SnapshotQuota {
  /** An API key today (`key:<id>`), a team later. */
  owner: string;
  /** Most bytes the owner's snapshots may hold together, this one and the hidden snapshots of running forks included. */
  maxBytes: number;
  /** Most snapshots kept from one sandbox (a fork's hidden snapshot does not count). */
  maxPerSandbox: number;
}

/** Snapshot storage charged to one owner. */
export interface SnapshotUsage {
  owner: string;
  bytes: number;
  /** Snapshots charged, a running fork's hidden one included. */
  snapshots: number;
}

export interface SnapshotSandboxOptions {
  /** A name for the snapshot; taking another snapshot with the same name replaces what the name points at. */
  name?: string;
  /** Charge the snapshot to an owner and refuse it beyond their limits; uncharged without. */
  quota?: SnapshotQuota;
  signal?: AbortSignal;
}

/** How each fork is created: like CreateSandboxOptions, with the template being the fork's snapshot. */
export type ForkSandboxCreateOptions = Omit<CreateSandboxOptions, "template" | "signal" | "limits" | "allowInternetAccess" | "egress" | "volumeMounts">;

export interface ForkSandboxOptions {
  /** Number of forks (1 or more). */
  count: number;
  /** Per fork (index 0…count-1): its envd access token and extra env vars (added to the source's). */
  forkOptions: (index: number) => ForkSandboxCreateOptions;
  /** Charge the fork's hidden snapshot to an owner (while its forks run) and refuse it beyond their limits. */
  quota?: SnapshotQuota;
  signal?: AbortSignal;
}

/** One fork's outcome: exactly one of `sandbox` or `error`. */
export type ForkResult = { sandbox: SandboxRecord; error?: undefined } | { sandbox?: undefined; error: Error };

export interface Orchestrator {
  /** Create a sandbox (from the warm pool when one is ready) and return when envd answers. */
  createSandbox(opts: CreateSandboxOptions): Promise<SandboxRecord>;
  /**
   * Pause a sandbox. With memory (the default) every process is frozen where it is, the network address and the
   * writable layer stay; `memory: false` is a filesystem pause (see PauseKind), and converts a memory-paused one.
   * Idempotent (pausing a paused sandbox the same way resolves its record); undefined when unknown.
   * Optional: an orchestrator that cannot pause leaves it out and the control plane answers "not supported".
   */
  pauseSandbox?(sandboxId: string, opts?: { memory?: boolean; signal?: AbortSignal }): Promise<SandboxRecord | undefined>;
  /**
   * Resume a paused sandbox: a memory pause continues where it stopped, a filesystem pause cold-boots (same id,
   * address, envd token and env vars; the template's start command runs again). `memory: false` cold-boots a
   * memory-paused sandbox too (E2B's `onResume: 'reboot'`). Idempotent (a running one resolves its record);
   * undefined when unknown.
   */
  resumeSandbox?(sandboxId: string, opts?: { memory?: boolean; signal?: AbortSignal }): Promise<SandboxRecord | undefined>;
  /** Events the orchestrator decided on its own (pause conversions). Returns an unsubscribe function. */
  onSandboxLifecycleEvent?(listener: (event: SandboxLifecycleEvent) => void): () => void;
  /**
   * Snapshot a sandbox's files into a new template (see SnapshotInfo): the sandbox is frozen while its writable
   * layer is copied (reflinks) and thawed after; a paused sandbox stays paused. Undefined when the sandbox is unknown.
   */
  snapshotSandbox?(sandboxId: string, opts?: SnapshotSandboxOptions): Promise<SnapshotInfo | undefined>;
  /** Snapshots taken by snapshotSandbox and not deleted (deleted like templates), newest first. */
  listSnapshots?(): SnapshotInfo[];
  /** Snapshot storage per owner (deleting snapshots frees it). */
  snapshotUsage?(): SnapshotUsage[];
  /**
   * Snapshot a sandbox once and start `count` sandboxes from it, each with the source's files, limits, network
   * setting and env vars (processes are not copied). Each fork succeeds or fails on its own. Undefined when the
   * sandbox is unknown. The snapshot itself is not kept as a template.
   */
  forkSandbox?(sandboxId: string, opts: ForkSandboxOptions): Promise<ForkResult[] | undefined>;
  /** Kill a sandbox (running or paused) and remove every trace of it. Resolves false when it did not exist. */
  killSandbox(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<boolean>;
  getSandbox(sandboxId: string): SandboxRecord | undefined;
  listSandboxes(): SandboxRecord[];
  /** One metrics sample taken now from the sandbox's cgroups and disk. */
  sampleMetrics(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<SandboxMetricSample | undefined>;
  /** Resolve a template reference (id, alias, `alias:tag`); undefined when unknown. */
  resolveTemplate(ref: string): TemplateInfo | undefined;
  listTemplates(): TemplateInfo[];
  /** Called when a sandbox ends by any path (kill, crash of its init). Returns an unsubscribe function. */
  onSandboxExit(listener: (sandboxId: string, reason: SandboxExitReason) => void): () => void;
  /** Stop the pool and background work. Running sandboxes keep running (restart safety). */
  close(): Promise<void>;
}

/**
 * A checkpoint: a sandbox's files at one moment, kept copy-on-write (a read-only btrfs subvolume snapshot of its
 * writable layer; a reflink copy where btrfs is missing). Checkpoints form a tree: each one's parent is the
 * checkpoint the sandbox's state descended from when it was taken (the last one taken or rolled back to, or the
 * one the sandbox was branched from). Files only: process memory is not part of it (CRIU does not work on these
 * kernels); the on-disk record leaves room for a memory image from a future driver.
 */
export interface CheckpointInfo {
  checkpointId: string;
  /** The sandbox it was taken from (it may have ended since: checkpoints stay until deleted). */
  sandboxId: string;
  /** The checkpoint this one descends from; null for a root. */
  parentId: string | null;
  label?: string;
  createdAt: Date;
  /** Disk bytes only this checkpoint holds, i.e. what deleting it frees now (btrfs exclusive bytes; du without btrfs). */
  sizeBytes: number;
  /** The template the sandbox started from (children of the checkpoint start on its layers). */
  templateId: string;
  /** Who its bytes are charged to (SnapshotQuota.owner); absent when taken without a quota. */
  owner?: string;
  /** Network setting of the sandbox when it was taken; children get the same. */
  allowInternetAccess: boolean;
  /** allowOut/denyOut of the sandbox when it was taken (absent: none); children get the same. */
  egress?: EgressRuleLists;
  /** What it holds: files only, today. */
  contents: "files";
}

/** The lineage tree around a sandbox: every checkpoint connected to it, and which one its current state descends from. */
export interface CheckpointTree {
  sandboxId: string;
  /** The checkpoint the sandbox's current files descend from (last taken, rolled back to or branched from). */
  currentId: string | null;
  /** Parents before their children, oldest first among siblings. */
  checkpoints: CheckpointInfo[];
}

export interface CheckpointSandboxOptions {
  label?: string;
  /** Charge the checkpoint's bytes to an owner, in the same quota as snapshots; refused beyond it. */
  quota?: SnapshotQuota;
  signal?: AbortSignal;
}

export interface BranchCheckpointOptions {
  /** Number of children (1 or more). */
  count: number;
  /** Per child (index 0…count-1): its envd access token and env vars. */
  forkOptions: (index: number) => ForkSandboxCreateOptions;
  signal?: AbortSignal;
}

export interface DeleteCheckpointOptions {
  /** Delete every checkpoint descending from it too; without it a checkpoint with descendants is refused. */
  cascade?: boolean;
  signal?: AbortSignal;
}

/**
 * Checkpoint trees (see CheckpointInfo), optional like snapshots: an orchestrator without them leaves them out and
 * the control plane answers "not supported". (Declared as a merge into Orchestrator above.)
 */
export interface Orchestrator {
  /** Checkpoint a sandbox's files (a running one is frozen for the moment of the snapshot). Undefined when unknown. */
  checkpointSandbox?(sandboxId: string, opts?: CheckpointSandboxOptions): Promise<CheckpointInfo | undefined>;
  /** The lineage tree of a sandbox; undefined when neither the sandbox nor any checkpoint of it is known. */
  listCheckpoints?(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<CheckpointTree | undefined>;
  /** One checkpoint by id, also after its sandbox ended; undefined when unknown. */
  getCheckpoint?(checkpointId: string, opts?: { signal?: AbortSignal }): Promise<CheckpointInfo | undefined>;
  /**
   * Restore a running sandbox in place to a checkpoint of its lineage: same id, address, envd token and env vars;
   * its processes end and it boots again on the checkpoint's files (as after a filesystem pause). Undefined when
   * the sandbox is unknown; NotFound when the checkpoint is.
   */
  rollbackSandbox?(sandboxId: string, checkpointId: string, opts?: { signal?: AbortSignal }): Promise<SandboxRecord | undefined>;
  /**
   * Start `count` sandboxes from a checkpoint, each on the template's layers with a writable snapshot of the
   * checkpoint as its own layer. Each child succeeds or fails in its own slot. Undefined when the checkpoint is unknown.
   * `createSandbox({ template: checkpointId })` starts one child the same way.
   */
  branchCheckpoint?(checkpointId: string, opts: BranchCheckpointOptions): Promise<ForkResult[] | undefined>;
  /**
   * Delete a checkpoint (and with `cascade` its descendants, leaves first); resolves the ids deleted, undefined when
   * unknown. Refused (FailedPrecondition, reason "checkpoint_has_dependants") while checkpoints descend from it.
   */
  deleteCheckpoint?(checkpointId: string, opts?: DeleteCheckpointOptions): Promise<string[] | undefined>;
}

/**
 * A sandbox's egress as the firewall enforces it (E2B's allow_internet_access with network.allowOut/denyOut, IPv4
 * addresses and CIDRs): allowOut wins over denyOut, what neither names follows allowInternetAccess.
 */
export interface SandboxEgress {
  allowInternetAccess: boolean;
  allowOut: string[];
  denyOut: string[];
  /** As EgressRuleLists.proxied; absent: "none". */
  proxied?: EgressProxying;  /** As EgressRuleLists.inspectPorts. */
  inspectPorts?: number[];
}

/** Egress rules, optional like pauses. (Declared as a merge into Orchestrator above.) */
export interface Orchestrator {
  /**
   * Replace a sandbox's egress live, in one firewall transaction (a failing update leaves the old rules), and keep
   * it in the sandbox's record so that a cold boot or a restarted orchestrator applies it again. Malformed entries
   * are InvalidArgument. Undefined when the sandbox is unknown.
   */
  setSandboxEgress?(sandboxId: string, egress: SandboxEgress, opts?: { signal?: AbortSignal }): Promise<SandboxRecord | undefined>;
  /** The newest `limit` egress records of a sandbox (egress proxy and resolver), oldest first. */
  egressLog?(sandboxId: string, limit?: number): EgressEvent[];
  /** Every egress record as it happens. Returns an unsubscribe function. */
  onEgressEvent?(listener: (event: EgressEvent) => void): () => void;
  /**
   * Make a service on the host reachable from every sandbox at `http://<name>:<port>/` (port 80 by default): the
   * sandboxes' resolver answers the name with their gateway, and gateway:port is forwarded to gateway:hostPort, where
   * the service must listen (on the gateway address or 0.0.0.0). Resolves a function that takes it away again.
   */
  registerHostService?(service: { name: string; hostPort: number; port?: number; hostsFile?: boolean }, opts?: { signal?: AbortSignal }): Promise<() => Promise<void>>;
  /** The sandboxes' gateway address (where host services are reached). */
  readonly sandboxGateway?: string;
  /**
   * Apply sandboxes' header transforms at egress with `interceptor` (undefined: none). Sandboxes whose egress lists
   * name a domain or are proxied go through the egress proxy; hosts the interceptor has headers for are relayed with them (TLS
   * terminated with its certificates), all others spliced.
   */
  setEgressInterceptor?(interceptor: EgressInterceptor | undefined): void;
  /**
   * Where sandboxes whose egress is proxied "tunnel" connect through (their user's proxy, looked up per
   * connection): every TCP port of theirs goes through the egress proxy and then that proxy; none, or a sandbox
   * the lookup answers nothing for, and their TCP is refused.
   */
  setEgressUpstreams?(lookup: ((sandboxId: string) => UpstreamProxy | undefined) | undefined): void;
}

/** One connection the egress proxy carried or refused, or one name the resolver refused, with its sandbox's template. */
export interface EgressEvent extends EgressRecord {
  templateId: string;
}

/**
 * Volumes, optional like pauses (declared as a merge into Orchestrator above): directories that outlive sandboxes,
 * each with its own size limit, bound into sandboxes by CreateSandboxOptions.volumeMounts. Which volumes exist, who
 * owns them and which sandboxes mount them is the control plane's to know; the orchestrator keeps their files.
 */
export interface Orchestrator {
  /** Make a volume's storage with a size limit in MiB (idempotent). Resolves its host directory. */
  createVolume?(volumeId: string, opts: { sizeMB: number; signal?: AbortSignal }): Promise<string>;
  /** Delete a volume's files for good; the caller makes sure no sandbox mounts it. A missing volume is not an error. */
  deleteVolume?(volumeId: string, opts?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Where a volume's files are on this host (what the content API reads and writes) and the host uid that is uid 0
   * in sandboxes on disk (sandbox ids u are stored as uidBase + u); undefined when the volume has none here.
   */
  volumeHost?(volumeId: string): Promise<VolumeHost | undefined>;
}

/** Bytes of a sandbox's log (envd's stderr: its own lines and its processes' output) from an offset. */
export interface SandboxLogChunk {
  data: Buffer;
  /** Where the next read starts. Smaller than the offset asked for when the log was emptied since (envd rotates it). */
  next: number;
}

/** How full one pool is: the sandboxes it keeps ready for creates of its template. */
export interface PoolFill {
  /** The template reference the pool follows (an alias such as `base`, or a name). */
  template: string;
  /**
   * `warm`: the configured pool; `prestarted`: a shipped template's, its start command already run; `shells`: prepared
   * sandboxes for any template (template "*").
   */
  kind: "warm" | "prestarted" | "shells";
  /** Sandboxes the pool keeps ready when full. */
  target: number;
  ready: number;
  /** Being launched to refill it (pools launch one at a time). */
  starting: number;
}

/** Pool fill, optional like pauses. (Declared as a merge into Orchestrator above.) */
export interface Orchestrator {
  /** Every pool's fill now, read from memory (cheap enough for each /metrics scrape). */
  poolFill?(): PoolFill[];
}

/** A sandbox's log, optional like pauses. (Declared as a merge into Orchestrator above.) */
export interface Orchestrator {
  /** At most `maxBytes` of the sandbox's log from `offset`; undefined when the sandbox is unknown. */
  readSandboxLog?(sandboxId: string, offset: number, maxBytes: number): Promise<SandboxLogChunk | undefined>;
}

/** What a cold boot of a moved sandbox needs (its create's /init and start command), as its record keeps it. */
export interface MovedBootSpec {
  /** Layer ids on the host that holds the record (a receiving host names its own). */
  layers: string[];
  runtime?: { env: Record<string, string>; user: string; workdir?: string | undefined; startCmd?: string | undefined; readyCmd?: string | undefined } | undefined;
  envVars: Record<string, string>;
  accessToken: string;
}

/** A filesystem-paused sandbox as another host needs it to take it over (a cluster's move). */
export interface MovableSandbox {
  sandboxId: string;
  templateId: string;
  /** Its writable layer (the overlay upper directory) on this host: read it only while the sandbox stays halted. */
  upperDir: string;
  boot: MovedBootSpec;
  limits: SandboxLimits;
  allowInternetAccess: boolean;
  /** Its allowOut/denyOut in canonical form (re-applied at its boot); absent: none. */
  egress?: import("./network/egress-rules.js").EgressRules;
  startedAt: string;
  /** The boot id of its last boot here: a new boot (a resume) changes it, so a copy read before is stale. */
  bootId?: string;
}

export interface ImportSandboxOptions {
  sandboxId: string;
  templateId: string;
  /** Its boot spec with this host's layer ids. */
  boot: MovedBootSpec;
  limits: SandboxLimits;
  allowInternetAccess: boolean;
  egress?: import("./network/egress-rules.js").EgressRules | undefined;
  startedAt?: string | undefined;
  /** Write the sandbox's files into its (empty) overlay upper directory. */
  fillUpper: (upperDir: string, signal?: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
}

/** Moving sandboxes between hosts, optional like pauses. (Declared as a merge into Orchestrator above.) */
export interface Orchestrator {
  /** A filesystem-paused sandbox without volumes as another host needs it; undefined otherwise (running, memory-paused, unknown). */
  movableSandbox?(sandboxId: string): MovableSandbox | undefined;
  /** Make a sandbox of another host this host's, filesystem-paused (resumeSandbox cold-boots it). */
  importSandbox?(opts: ImportSandboxOptions): Promise<SandboxRecord>;
}
