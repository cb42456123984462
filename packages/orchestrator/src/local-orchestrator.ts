// The orchestrator of one machine: the facade behind the control plane's Orchestrator interface. It is assembled
// from the host's parts (host-parts.ts) and delegates each job to its own module: creating and claiming sandboxes
// (create-sandbox.ts, sandbox-pools.ts), pause and resume (pause-resume.ts), snapshots and forks (snapshots/),
// checkpoint trees (checkpoints/), metrics (metrics-sampler.ts), re-adoption after a restart (adopt-or-reap.ts), liveness (liveness-monitor.ts) and
// template builds (templates/builder/).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { adoptOrReap } from "./adopt-or-reap.js";
import { ColdBoot } from "./cold-boot.js";
import type { OrchestratorConfig } from "./config.js";
import { createSandbox } from "./create-sandbox.js";
import { openHostParts, type HostParts } from "./host-parts.js";
import { LiveSandboxes, toRecord } from "./live-sandboxes.js";
import { LivenessMonitor } from "./liveness-monitor.js";
import type { Logger } from "./logger.js";
import { MetricsSampler } from "./metrics-sampler.js";
import { exportMovable, importMoved, removeStaleTransfers } from "./moved-sandboxes.js";
import type {
  CreateSandboxOptions,
  ForkResult,
  ForkSandboxOptions,
  Orchestrator,
  SandboxExitReason,
  SandboxLifecycleEvent,
  SandboxMetricSample,
  SandboxRecord,
  SnapshotInfo,
  SnapshotSandboxOptions,
  SnapshotUsage,
  TemplateInfo,
} from "./orchestrator-api.js";
import type { EgressInterceptor } from "./egress/header-relay.js";
import type { UpstreamProxy } from "./egress/upstream-proxy.js";
import type { EgressEvent, SandboxEgress, VolumeHost } from "./orchestrator-api.js";
import type {
  BranchCheckpointOptions,
  CheckpointInfo,
  CheckpointSandboxOptions,
  CheckpointTree,
  DeleteCheckpointOptions,
} from "./orchestrator-api.js";
import { branchCheckpoint, startChild, type BranchDeps } from "./checkpoints/branch-checkpoint.js";
import { CheckpointSizes } from "./checkpoints/checkpoint-sizes.js";
import { CheckpointStore } from "./checkpoints/checkpoint-store.js";
import { rollbackSandbox } from "./checkpoints/rollback-sandbox.js";
import { SandboxCheckpoints } from "./checkpoints/sandbox-checkpoints.js";
import { PauseResume } from "./pause-resume.js";
import { reaperPaths, stopReaper } from "./reaper/reaper.js";
import type { EnvdRuntimeSource } from "./runtime.js";
import { setSandboxEgress } from "./sandbox-egress.js";
import { SandboxOpQueue } from "./sandbox-op-queue.js";
import { pauseKindOf } from "./sandbox-record.js";
import { SandboxPools } from "./sandbox-pools.js";
import { SandboxForks } from "./snapshots/sandbox-forks.js";
import { SandboxSnapshots } from "./snapshots/sandbox-snapshots.js";
import { SnapshotCharges } from "./snapshots/snapshot-charges.js";
import { removeStaleSnapshotCopies } from "./snapshots/snapshot-layer.js";
import { TemplateBuilder } from "./templates/builder/template-builder.js";
import { templateInfoWithEgress } from "./snapshots/snapshot-layer.js";
import { VolumeStorage, volumeDir } from "./volumes/volume-storage.js";
import { readSandboxLogFile } from "./sandbox-log.js";
import type { ImportSandboxOptions, MovableSandbox, PoolFill, SandboxLogChunk } from "./orchestrator-api.js";

export interface LocalOrchestratorOptions {
  config?: Partial<OrchestratorConfig>;
  /** Where the envd bundle and its native modules are (the build output of @burrow/envd). */
  envd: EnvdRuntimeSource;
  logger?: Logger;
  /** Progress lines for long first-run work (template build). */
  onProgress?: (line: string) => void;
  /** Build the base template when it is missing (default true; `burrow down` needs no template). */
  buildBaseTemplate?: boolean;
  signal?: AbortSignal;
}

export class LocalOrchestrator implements Orchestrator {
  private readonly live: LiveSandboxes;
  /** Pauses, resumes and snapshots of one sandbox, one at a time. */
  private readonly ops: SandboxOpQueue;
  private readonly pools: SandboxPools;
  private readonly metrics: MetricsSampler;
  private readonly pauses: PauseResume;
  /** Halt and boot a sandbox on its files (filesystem pauses; rollback builds on them too). */
  readonly coldBoot: ColdBoot;
  /** Snapshot storage charged to owners (quotas). */
  private readonly charges: SnapshotCharges;
  private readonly snapshots: SandboxSnapshots;
  private readonly forks: SandboxForks;
  private readonly liveness: LivenessMonitor;
  /** Checkpoint trees (checkpoints/): records and heads, and the operations on them. */
  private readonly checkpointStore: CheckpointStore;
  private readonly checkpoints: SandboxCheckpoints;
  /** Builds custom templates (E2B Template API, Dockerfiles) into layers on this host. */
  readonly templateBuilder: TemplateBuilder;
  readonly config: Readonly<OrchestratorConfig>;
  /** Volumes' files (volumes/): subvolumes with their own limits, bound into sandboxes at launch. */
  private readonly volumes: VolumeStorage;

  private constructor(private readonly parts: HostParts) {
    const { config, templates, host, logger } = parts;
    this.config = config;
    this.metrics = new MetricsSampler({
      limitUsage: (dir, signal) => parts.storage.limitUsage(dir, signal),
      volumeDir: (volumeId) => volumeDir(config.stateDir, volumeId),
    });
    this.volumes = new VolumeStorage({ stateDir: config.stateDir, storage: parts.storage, uidBase: config.uidBase });
    const live = (this.live = new LiveSandboxes(logger));
    this.ops = new SandboxOpQueue(live);
    this.templateBuilder = new TemplateBuilder({
      store: templates,
      host,
      config,
      logger,
      // Checkpoints keep the layers their files belong on, like running sandboxes do.
      isTemplateInUse: (templateId) => live.usesTemplate(templateId) || this.checkpointStore.usesTemplate(templateId),
    });
    // Layers of a deleted template stay while its sandboxes run; the last one ending frees them.
    live.onExit(() => void this.templateBuilder.sandboxEnded());
    this.charges = new SnapshotCharges(join(config.stateDir, "snapshot-charges.json"));
    this.pools = new SandboxPools({ config, templates, host, logger });
    this.coldBoot = new ColdBoot({ host, logger });
    this.pauses = new PauseResume({
      ops: this.ops,
      metrics: this.metrics,
      coldBoot: this.coldBoot,
      live,
      memoryPauseMaxAgeMs: config.memoryPauseMaxAgeMs,
      logger,
    });
    this.snapshots = new SandboxSnapshots({ live, ops: this.ops, templates, charges: this.charges, metrics: this.metrics, storage: parts.storage, logger });
    this.forks = new SandboxForks({
      live,
      snapshots: this.snapshots,
      charges: this.charges,
      createSandbox: (opts) => this.createSandbox(opts),
      deleteTemplate: (templateId) => this.templateBuilder.deleteTemplate(templateId),
      logger,
    });
    live.onExit(() => void this.forks.releaseForkBases());
    this.liveness = new LivenessMonitor({ live, host, logger });
    const checkpointStore = (this.checkpointStore = new CheckpointStore(join(config.stateDir, "checkpoints"), logger));
    this.checkpoints = new SandboxCheckpoints({
      store: checkpointStore,
      sizes: new CheckpointSizes(checkpointStore.root, parts.storage, logger),
      live,
      ops: this.ops,
      storage: parts.storage,
      templates,
      charges: this.charges,
      metrics: this.metrics,
      onDeleted: () => void this.templateBuilder.sandboxEnded(),
      logger,
    });
    this.charges.chargeAlso(() => this.checkpoints.charges());
    live.onExit((sandboxId) => parts.egress.audit.forget(sandboxId));
    // A checkpoint outlives its sandbox; only which one the sandbox's files descended from goes with it.
    live.onExit((sandboxId) => void checkpointStore.dropHead(sandboxId).catch(() => undefined));
  }

  static async create(opts: LocalOrchestratorOptions): Promise<LocalOrchestrator> {
    const parts = await openHostParts(opts);
    const orchestrator = new LocalOrchestrator(parts);
    await orchestrator.start();
    return orchestrator;
  }

  /** Take back or reap what a previous run left, settle snapshot charges and layers, then start pools and liveness. */
  private async start(): Promise<void> {
    const { config, cgroups, network, host, templates, logger } = this.parts;
    await adoptOrReap({
      stateDir: config.stateDir,
      cgroups,
      network,
      host,
      live: this.live,
      onLifecycleEvent: (event) => this.live.emitLifecycleEvent(event),
      logger,
    });
    await removeStaleTransfers(config.stateDir, logger);
    await removeStaleSnapshotCopies(templates.layersRoot).catch((error: unknown) =>
      logger.error({ err: error }, "stale snapshot copies could not all be removed; the next start retries"),
    );
    await this.charges.load();
    await this.checkpointStore.load((sandboxId) => this.live.has(sandboxId));
    await this.forks.releaseForkBases();
    // What a killed build or a deleted template left in the layers directory goes before anything builds.
    await this.templateBuilder.requestGarbageCollection();
    this.pools.start();
    this.liveness.start();
    this.pauses.start();
  }

  createSandbox(opts: CreateSandboxOptions): Promise<SandboxRecord> {
    // A checkpoint's id names it as a template: the sandbox starts on its files (a branch of one).
    const checkpoint = this.checkpointStore.get(opts.template);
    if (checkpoint) return startChild(this.branchDeps(), checkpoint, opts);
    const { templates, host, logger } = this.parts;
    return createSandbox(
      { templates, builder: this.templateBuilder, host, pools: this.pools, live: this.live, logger, sandboxCaPem: () => this.parts.egress.sandboxCaPem },
      opts,
    );
  }

  snapshotSandbox(sandboxId: string, opts?: SnapshotSandboxOptions): Promise<SnapshotInfo | undefined> {
    return this.snapshots.snapshot(sandboxId, opts);
  }

  snapshotUsage(): SnapshotUsage[] {
    return this.snapshots.usage();
  }

  listSnapshots(): SnapshotInfo[] {
    return this.snapshots.list();
  }

  checkpointSandbox(sandboxId: string, opts?: CheckpointSandboxOptions): Promise<CheckpointInfo | undefined> {
    return this.checkpoints.checkpoint(sandboxId, opts);
  }

  listCheckpoints(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<CheckpointTree | undefined> {
    return this.checkpoints.list(sandboxId, opts?.signal);
  }

  getCheckpoint(checkpointId: string, opts?: { signal?: AbortSignal }): Promise<CheckpointInfo | undefined> {
    return this.checkpoints.get(checkpointId, opts?.signal);
  }

  rollbackSandbox(sandboxId: string, checkpointId: string, opts?: { signal?: AbortSignal }): Promise<SandboxRecord | undefined> {
    const { storage, logger } = this.parts;
    const deps = { store: this.checkpointStore, ops: this.ops, storage, coldBoot: this.coldBoot, logger };
    return rollbackSandbox(deps, sandboxId, checkpointId, opts?.signal);
  }

  branchCheckpoint(checkpointId: string, opts: BranchCheckpointOptions): Promise<ForkResult[] | undefined> {
    return branchCheckpoint(this.branchDeps(), checkpointId, opts);
  }

  deleteCheckpoint(checkpointId: string, opts?: DeleteCheckpointOptions): Promise<string[] | undefined> {
    return this.checkpoints.delete(checkpointId, opts);
  }

  private branchDeps(): BranchDeps {
    const { templates, host, storage } = this.parts;
    return {
      store: this.checkpointStore,
      storage,
      create: { templates, builder: this.templateBuilder, host, pools: this.pools, live: this.live },
    };
  }

  forkSandbox(sandboxId: string, opts: ForkSandboxOptions): Promise<ForkResult[] | undefined> {
    return this.forks.fork(sandboxId, opts);
  }

  async killSandbox(sandboxId: string): Promise<boolean> {
    const sandbox = this.live.get(sandboxId);
    if (!sandbox) return false;
    this.live.delete(sandboxId);
    // A pause, resume or snapshot under way finishes first, so that nothing freezes or thaws a cgroup being torn down.
    await this.ops.idle(sandboxId);
    // A paused sandbox needs no thaw first: SIGKILL reaches frozen tasks (cgroup.kill on cgroup2; the v1
    // freezer backend freezes, kills and thaws), and killed tasks never run user code again.
    await this.parts.host.destroy(sandbox);
    this.live.emitExit(sandboxId, "killed");
    return true;
  }

  pauseSandbox(sandboxId: string, opts?: { memory?: boolean; signal?: AbortSignal }): Promise<SandboxRecord | undefined> {
    return this.pauses.pause(sandboxId, { memory: opts?.memory, signal: opts?.signal });
  }

  resumeSandbox(sandboxId: string, opts?: { memory?: boolean; signal?: AbortSignal }): Promise<SandboxRecord | undefined> {
    return this.pauses.resume(sandboxId, { memory: opts?.memory, signal: opts?.signal });
  }

  movableSandbox(sandboxId: string): MovableSandbox | undefined {
    return exportMovable(this.live, sandboxId);
  }

  async importSandbox(opts: ImportSandboxOptions): Promise<SandboxRecord> {
    const { config, cgroups, network, host, storage, templates, logger } = this.parts;
    const layerExists = (layerId: string) => existsSync(templates.layerPath(layerId));
    return toRecord(await importMoved({ config, cgroups, network, host, storage, live: this.live, layerExists, logger }, opts));
  }

  onSandboxLifecycleEvent(listener: (event: SandboxLifecycleEvent) => void): () => void {
    return this.live.onLifecycleEvent(listener);
  }

  /** Turn memory pauses past memoryPauseMaxAgeMs into filesystem pauses now (tests; it also runs periodically). */
  convertAgedPauses(): Promise<void> {
    return this.pauses.convertAged();
  }

  setSandboxEgress(sandboxId: string, egress: SandboxEgress, opts?: { signal?: AbortSignal }): Promise<SandboxRecord | undefined> {
    return setSandboxEgress(this.ops, sandboxId, egress, opts?.signal);
  }

  getSandbox(sandboxId: string): SandboxRecord | undefined {
    const sandbox = this.live.get(sandboxId);
    return sandbox ? toRecord(sandbox) : undefined;
  }

  listSandboxes(): SandboxRecord[] {
    return this.live.list().map(toRecord);
  }

  async sampleMetrics(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<SandboxMetricSample | undefined> {
    const sandbox = this.live.get(sandboxId);
    if (!sandbox) return undefined;
    // A halted sandbox has no cgroups to read: nothing runs, nothing is held but its files.
    if (pauseKindOf(sandbox.record) === "filesystem") return this.metrics.halted(sandbox, opts?.signal);
    return this.metrics.sample(sandbox, opts?.signal);
  }

  async readSandboxLog(sandboxId: string, offset: number, maxBytes: number): Promise<SandboxLogChunk | undefined> {
    const sandbox = this.live.get(sandboxId);
    return sandbox ? readSandboxLogFile(sandbox.dir, offset, maxBytes) : undefined;
  }

  createVolume(volumeId: string, opts: { sizeMB: number }): Promise<string> {
    return this.volumes.create(volumeId, opts.sizeMB);
  }

  deleteVolume(volumeId: string, opts?: { signal?: AbortSignal }): Promise<void> {
    return this.volumes.remove(volumeId, opts?.signal);
  }

  async volumeHost(volumeId: string): Promise<VolumeHost | undefined> {
    const dir = await this.volumes.dir(volumeId);
    return dir === undefined ? undefined : { dir, uidBase: this.config.uidBase, uidCount: this.config.uidCount };
  }

  resolveTemplate(ref: string): TemplateInfo | undefined {
    const manifest = this.parts.templates.resolve(ref);
    return manifest ? templateInfoWithEgress(manifest) : undefined;
  }

  listTemplates(): TemplateInfo[] {
    return this.parts.templates.list().map(templateInfoWithEgress);
  }

  onSandboxExit(listener: (sandboxId: string, reason: SandboxExitReason) => void): () => void {
    return this.live.onExit(listener);
  }

  poolFill(): PoolFill[] {
    return this.pools.status();
  }

  /** Wait until the warm pool is full (start-up, benchmarks). */
  async warmPoolReady(signal?: AbortSignal): Promise<void> {
    await this.pools.waitFull(signal);
  }

  egressLog(sandboxId: string, limit?: number): EgressEvent[] {
    const templateId = this.live.get(sandboxId)?.record.templateId ?? "";
    return this.parts.egress.audit.list(sandboxId, limit).map((r) => ({ ...r, templateId }));
  }

  onEgressEvent(listener: (event: EgressEvent) => void): () => void {
    return this.parts.egress.audit.subscribe((r) => listener({ ...r, templateId: this.live.get(r.sandboxId)?.record.templateId ?? "" }));
  }

  registerHostService(service: { name: string; hostPort: number; port?: number; hostsFile?: boolean }, opts?: { signal?: AbortSignal }): Promise<() => Promise<void>> {
    return this.parts.egress.registerHostService(service, opts?.signal);
  }

  setEgressInterceptor(interceptor: EgressInterceptor | undefined): void {
    this.parts.egress.setInterceptor(interceptor);
  }

  setEgressUpstreams(lookup: ((sandboxId: string) => UpstreamProxy | undefined) | undefined): void {
    this.parts.egress.setUpstreamProxies(lookup);
  }

  get sandboxGateway(): string {
    return this.parts.egress.gateway;
  }

  async close(): Promise<void> {
    this.liveness.stop();
    this.pauses.stop();
    await this.pools.close();
    await this.templateBuilder.close();
    await this.parts.egress.close();
  }

  /**
   * Kill every sandbox and remove the host-wide network and cgroup parents. For tests and `burrow down`:
   * leaves the machine as it was before the orchestrator started.
   */
  async shutdown(): Promise<void> {
    await this.close();
    await Promise.allSettled(this.live.ids().map((id) => this.killSandbox(id)));
    await this.parts.network.teardown();
    await this.parts.cgroups.close();
    await stopReaper(reaperPaths(this.config.stateDir));
    await this.parts.storage.unmount();
  }
}
