// The orchestrator of one machine: composes templates, the sandbox host, the warm pool, re-adoption after a
// restart and liveness monitoring behind the control plane's Orchestrator interface.
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { resolveOrchestratorConfig, statePaths, type OrchestratorConfig } from "./config.js";
import { createCgroupManager } from "./cgroups/index.js";
import { diskUsageBytes } from "./disk-usage.js";
import { envdAt, initEnvd } from "./envd-client/index.js";
import { BurrowError, Code } from "@burrow/protocol";
import { isSandboxInitAlive, launcherBinaryPath } from "./launcher/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, stopReaper, type ReaperPaths } from "./reaper/reaper.js";
import { reaperCommandRunner, type CommandRunner } from "./reaper/run-command.js";
import { silentLogger, type Logger } from "./logger.js";
import { createNetworkManager } from "./network/index.js";
import type {
  CreateSandboxOptions,
  ForkResult,
  ForkSandboxOptions,
  Orchestrator,
  SandboxExitReason,
  SandboxMetricSample,
  SandboxRecord,
  SnapshotInfo,
  SnapshotQuota,
  SnapshotSandboxOptions,
  SnapshotUsage,
  TemplateInfo,
} from "./orchestrator-api.js";
import { randomId } from "./ids.js";
import {
  commitSnapshotLayer,
  copyUpper,
  discardCopy,
  isSnapshotManifest,
  removeStaleSnapshotCopies,
  snapshotInfo,
  type SnapshotManifest,
} from "./snapshots/snapshot-layer.js";
import { SnapshotCharges, type SnapshotReservation } from "./snapshots/snapshot-charges.js";
import { ensureRuntime, type EnvdRuntimeSource } from "./runtime.js";
import { SandboxHost, type HostedSandbox } from "./sandbox-host.js";
import { openSandboxStorage, type SandboxStorage } from "./storage/disk-storage.js";
import { readRecord, writeRecord } from "./sandbox-record.js";
import { ensureBaseTemplate } from "./templates/base-template.js";
import { isCodeInterpreterTemplate } from "./templates/code-interpreter.js";
import { ensureMcpGatewayTemplate, isMcpGatewayTemplate } from "./templates/mcp-gateway.js";
import { BROWSER } from "./templates/browser.js";
import { DESKTOP } from "./templates/desktop.js";
import { ensureShippedTemplate, isShippedTemplate } from "./templates/shipped-template.js";
import {
  TemplateBuilder,
  parseTemplateName,
  ensureCodeInterpreterTemplate,
  startTemplateProcess,
} from "./templates/index.js";
import { TemplateStore, templateInfo, type TemplateManifest, type TemplateRuntime } from "./templates/template-store.js";
import type { CgroupManager, NetworkManager, SandboxLimits } from "./types.js";
import { WarmPool } from "./warm-pool.js";
import { PrestartedPools } from "./prestarted-pools.js";

const LIVENESS_INTERVAL_MS = 1000;
const REMOVAL_RETRY_INTERVAL_MS = 60_000;
const DISK_USAGE_TTL_MS = 30_000;
/** Most forks one request may ask for. */
const MAX_FORKS = 20;

/** What a sandbox was started from, for snapshots and forks (kept in memory: env vars may hold secrets). */
interface LaunchSource {
  layers: string[];
  runtime?: TemplateRuntime | undefined;
  envVars: Record<string, string>;
}

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

interface CpuMark {
  usageNs: number;
  atNs: bigint;
}

export class LocalOrchestrator implements Orchestrator {
  private readonly sandboxes = new Map<string, HostedSandbox>();
  private readonly exitListeners = new Set<(sandboxId: string, reason: SandboxExitReason) => void>();
  private readonly cpuMarks = new Map<string, CpuMark>();
  private readonly diskUsage = new Map<string, { bytes: number; at: number }>();
  /** The pause/resume in progress per sandbox (settled promise); kill and later pauses/resumes wait for it. */
  private readonly pending = new Map<string, Promise<void>>();
  /** Layers, runtime and env vars each sandbox created by this process started with. */
  private readonly sources = new Map<string, LaunchSource>();
  private livenessTimer: NodeJS.Timeout | undefined;
  /** When checkLiveness last retried removing directories of ended sandboxes (ms since the epoch). */
  private removalRetriedAt = 0;
  private pool: WarmPool | undefined;
  /** Stops the warm pool following template changes (set while a pool runs). */
  private unfollowTemplates: (() => void) | undefined;
  /** Snapshot storage charged to owners (quotas). */
  private readonly charges: SnapshotCharges;
  /** Pools of shipped templates whose sandboxes wait with their start command run (the desktop). */
  private readonly prestartedPools: PrestartedPools;
  /** Builds custom templates (E2B Template API, Dockerfiles) into layers on this host. */
  readonly templateBuilder: TemplateBuilder;

  private constructor(
    readonly config: Readonly<OrchestratorConfig>,
    private readonly templates: TemplateStore,
    private readonly host: SandboxHost,
    private readonly cgroups: CgroupManager,
    private readonly network: NetworkManager,
    private readonly storage: SandboxStorage,
    private readonly logger: Logger,
  ) {
    this.templateBuilder = new TemplateBuilder({
      store: templates,
      host,
      config,
      logger,
      isTemplateInUse: (templateId) => this.listSandboxes().some((s) => s.templateId === templateId),
    });
    // Layers of a deleted template stay while its sandboxes run; the last one ending frees them.
    this.onSandboxExit(() => void this.templateBuilder.sandboxEnded());
    this.charges = new SnapshotCharges(join(config.stateDir, "snapshot-charges.json"));
    this.prestartedPools = new PrestartedPools({ size: config.pool.size > 0 ? 1 : 0, templates, host, logger });
    this.onSandboxExit(() => void this.releaseForkBases());
  }

  static async create(opts: LocalOrchestratorOptions): Promise<LocalOrchestrator> {
    const config = resolveOrchestratorConfig(opts.config);
    const logger = opts.logger ?? silentLogger;
    await mkdir(config.stateDir, { recursive: true });
    // The reaper first: it runs the host tools sandboxes need (btrfs, nft, ip), so creating one forks nothing here.
    const reaper = reaperPaths(config.stateDir);
    const launcher = launcherBinaryPath();
    await ensureReaper(reaper, { reaper: reaperBinaryPath(launcher), launcher });
    const runCommand = reaperCommandRunner(reaper);
    const storage = await openSandboxStorage({ stateDir: config.stateDir, preferred: config.storage, logger, runCommand });
    let orchestrator: LocalOrchestrator;
    try {
      orchestrator = await LocalOrchestrator.assemble(opts, config, storage, logger, { reaper, runCommand });
    } catch (error) {
      // Nothing runs from this state directory yet (adoption comes later): leave the host as it was, with the
      // disk image unmounted, so a failed start (a subnet already in use, a broken base build) leaves no mount.
      await storage.unmount().catch((err: unknown) => logger.error({ err }, "could not unmount sandbox storage after a failed start"));
      throw error;
    }
    await orchestrator.adoptOrReap();
    await removeStaleSnapshotCopies(orchestrator.templates.layersRoot).catch((error: unknown) =>
      logger.error({ err: error }, "stale snapshot copies could not all be removed; the next start retries"),
    );
    await orchestrator.charges.load();
    await orchestrator.releaseForkBases();
    // What a killed build or a deleted template left in the layers directory goes before anything builds.
    await orchestrator.templateBuilder.requestGarbageCollection();
    orchestrator.startPool();
    orchestrator.livenessTimer = setInterval(() => orchestrator.checkLiveness(), LIVENESS_INTERVAL_MS);
    orchestrator.livenessTimer.unref();
    return orchestrator;
  }

  /** What create() sets up before it touches any sandbox; when it fails, create() unmounts the storage again. */
  private static async assemble(
    opts: LocalOrchestratorOptions,
    config: Readonly<OrchestratorConfig>,
    storage: SandboxStorage,
    logger: Logger,
    tools: { reaper: ReaperPaths; runCommand: CommandRunner },
  ): Promise<LocalOrchestrator> {
    const paths = statePaths(config.stateDir);
    await mkdir(paths.sandboxes, { recursive: true });
    const templates = new TemplateStore(paths.templates, paths.layers);
    await templates.load();
    if (opts.buildBaseTemplate !== false) {
      await ensureBaseTemplate({ store: templates, config, onProgress: opts.onProgress, signal: opts.signal });
    }
    const runtime = await ensureRuntime({ runtimeRoot: paths.runtime, envd: opts.envd, signal: opts.signal });
    const cgroups = await createCgroupManager({ instance: config.instance, logger });
    const network = createNetworkManager({
      instance: config.instance,
      subnet: config.subnet,
      logger,
      runCommand: tools.runCommand,
    });
    await network.setup(opts.signal);
    const host = new SandboxHost({
      config,
      reaper: tools.reaper,
      storage,
      cgroups,
      network,
      runtimeDir: runtime.dir,
      runtimeCommand: runtime.command,
      layerPath: (layerId) => templates.layerPath(layerId),
      logger,
    });
    return new LocalOrchestrator(config, templates, host, cgroups, network, storage, logger);
  }

  async createSandbox(opts: CreateSandboxOptions): Promise<SandboxRecord> {
    const template = await this.templateFor(opts.template, opts.signal);
    const limits = validateLimits({ ...template.defaults, ...definedOnly(opts.limits ?? {}) });
    const pool = this.pool;
    // Only a pooled sandbox of this very build (template id and layers as they are now) is handed out.
    let sandbox = pool?.take(template) ?? this.prestartedPools.take(template);
    if (!sandbox) {
      sandbox = await this.host.launch(template, limits, {
        allowInternetAccess: opts.allowInternetAccess,
        pooled: false,
        signal: opts.signal,
      });
    }
    try {
      await this.claim(sandbox, template, limits, opts);
    } catch (error) {
      await this.host.destroy(sandbox).catch(() => undefined);
      throw error;
    } finally {
      pool?.fill();
      this.prestartedPools.fill();
    }
    this.sandboxes.set(sandbox.record.sandboxId, sandbox);
    this.sources.set(sandbox.record.sandboxId, {
      layers: [...template.layers],
      runtime: template.runtime,
      envVars: { ...opts.envVars },
    });
    return toRecord(sandbox);
  }

  async snapshotSandbox(sandboxId: string, opts?: SnapshotSandboxOptions): Promise<SnapshotInfo | undefined> {
    const manifest = await this.takeSnapshot(sandboxId, opts?.name, undefined, opts?.quota, opts?.signal);
    return manifest && snapshotInfo(manifest);
  }

  snapshotUsage(): SnapshotUsage[] {
    return this.charges.usage(this.templates.list());
  }

  listSnapshots(): SnapshotInfo[] {
    return this.templates
      .list()
      .filter((m): m is SnapshotManifest => isSnapshotManifest(m) && m.forkOf === undefined)
      .map(snapshotInfo)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || a.snapshotId.localeCompare(b.snapshotId));
  }

  async forkSandbox(sandboxId: string, opts: ForkSandboxOptions): Promise<ForkResult[] | undefined> {
    const { count } = opts;
    if (!Number.isInteger(count) || count < 1 || count > MAX_FORKS) {
      throw new BurrowError(Code.InvalidArgument, `count must be an integer between 1 and ${MAX_FORKS}, got ${String(count)}`, {
        reason: "invalid_fork_count",
      });
    }
    const manifest = await this.takeSnapshot(sandboxId, undefined, sandboxId, opts.quota, opts.signal);
    if (!manifest) return undefined;
    let started = false;
    const source = this.sandboxes.get(sandboxId);
    const envVars = this.sources.get(sandboxId)?.envVars ?? {};
    const allowInternetAccess = source?.record.allowInternetAccess ?? true;
    try {
      const settled = await Promise.allSettled(
        Array.from({ length: count }, async (_, index) => {
          const fork = opts.forkOptions(index);
          return this.createSandbox({
            template: manifest.templateId,
            allowInternetAccess,
            envVars: { ...envVars, ...fork.envVars },
            envdAccessToken: fork.envdAccessToken,
            ...(opts.signal ? { signal: opts.signal } : {}),
          });
        }),
      );
      started = settled.some((result) => result.status === "fulfilled");
      return settled.map((result): ForkResult =>
        result.status === "fulfilled"
          ? { sandbox: result.value }
          : { error: result.reason instanceof Error ? result.reason : new Error(String(result.reason)) },
      );
    } finally {
      // Its layer stays while forks run: so does its charge, until the last of them ends.
      if (started && manifest.owner !== undefined && manifest.sizeBytes !== undefined) {
        await this.charges
          .chargeForkBase(manifest.templateId, manifest.owner, manifest.sizeBytes)
          .then(() => this.releaseForkBases())
          .catch((error: unknown) => this.logger.warn({ sandboxId, err: error }, "could not record a fork's snapshot charge"));
      }
      // The fork's snapshot is no template of its own: deleted like one, its layers stay while forks run.
      await this.templateBuilder
        .deleteTemplate(manifest.templateId)
        .catch((error: unknown) => this.logger.warn({ sandboxId, err: error }, "could not delete a fork's snapshot"));
    }
  }

  async killSandbox(sandboxId: string): Promise<boolean> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox) return false;
    this.forget(sandboxId);
    // A pause or resume under way finishes first, so that nothing freezes or thaws a cgroup being torn down.
    await this.pending.get(sandboxId);
    // A paused sandbox needs no thaw first: SIGKILL reaches frozen tasks (cgroup.kill on cgroup2; the v1
    // freezer backend freezes, kills and thaws), and killed tasks never run user code again.
    await this.host.destroy(sandbox);
    this.emitExit(sandboxId, "killed");
    return true;
  }

  async pauseSandbox(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<SandboxRecord | undefined> {
    return this.serialize(sandboxId, async (sandbox) => {
      if (sandbox.record.state === "paused") return;
      // The record says paused before the freeze: a restart in between freezes it again (adoptOrReap).
      await this.writeState(sandbox, "paused");
      try {
        await sandbox.cgroup.freeze(opts?.signal);
      } catch (error) {
        // Never leave a partly frozen sandbox behind: back to running, as if the pause had not been asked for.
        await sandbox.cgroup.thaw().catch((thawError: unknown) => this.logger.error({ sandboxId, err: thawError }, "thaw after failed pause failed"));
        await this.writeState(sandbox, "running").catch(() => undefined);
        throw new BurrowError(opts?.signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be paused: ${(error as Error).message}`, {
          reason: "pause_failed",
          cause: error,
        });
      }
      this.cpuMarks.delete(sandboxId);
      this.logger.info({ sandboxId }, "sandbox paused");
    });
  }

  async resumeSandbox(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<SandboxRecord | undefined> {
    return this.serialize(sandboxId, async (sandbox) => {
      if (sandbox.record.state !== "paused") return;
      try {
        await sandbox.cgroup.thaw(opts?.signal);
      } catch (error) {
        throw new BurrowError(opts?.signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be resumed: ${(error as Error).message}`, {
          reason: "resume_failed",
          cause: error,
        });
      }
      // Written after the thaw: a restart in between finds "paused" and freezes it again, which is what the
      // control plane (which records "running" only after this returns) still believes.
      await this.writeState(sandbox, "running");
      this.cpuMarks.delete(sandboxId);
      this.logger.info({ sandboxId }, "sandbox resumed");
    });
  }

  getSandbox(sandboxId: string): SandboxRecord | undefined {
    const sandbox = this.sandboxes.get(sandboxId);
    return sandbox ? toRecord(sandbox) : undefined;
  }

  listSandboxes(): SandboxRecord[] {
    return [...this.sandboxes.values()].map(toRecord);
  }

  async sampleMetrics(sandboxId: string, opts?: { signal?: AbortSignal }): Promise<SandboxMetricSample | undefined> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox) return undefined;
    const sample = await sandbox.cgroup.sample();
    const now = process.hrtime.bigint();
    const mark = this.cpuMarks.get(sandboxId);
    this.cpuMarks.set(sandboxId, { usageNs: sample.cpuUsageNs, atNs: now });
    const { cpuCount } = sandbox.record.limits;
    const cpuUsedPct = mark
      ? Math.min(100, Math.max(0, ((sample.cpuUsageNs - mark.usageNs) / Number(now - mark.atNs) / cpuCount) * 100))
      : 0;
    return {
      timestamp: new Date(),
      cpuCount,
      cpuUsedPct: Math.round(cpuUsedPct * 100) / 100,
      memUsed: sample.memoryUsedBytes,
      memTotal: Math.min(sample.memoryLimitBytes, sandbox.record.limits.memoryMB * 1024 * 1024),
      memCache: sample.memoryCacheBytes,
      diskUsed: await this.diskUsed(sandbox, opts?.signal),
      diskTotal: sandbox.record.limits.diskMB * 1024 * 1024,
    };
  }

  resolveTemplate(ref: string): TemplateInfo | undefined {
    const manifest = this.templates.resolve(ref);
    return manifest ? templateInfo(manifest) : undefined;
  }

  listTemplates(): TemplateInfo[] {
    return this.templates.list().map(templateInfo);
  }

  onSandboxExit(listener: (sandboxId: string, reason: SandboxExitReason) => void): () => void {
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** Wait until the warm pool is full (start-up, benchmarks). */
  async warmPoolReady(signal?: AbortSignal): Promise<void> {
    await this.pool?.waitFull(signal);
    await this.prestartedPools.waitFull(signal);
  }

  async close(): Promise<void> {
    if (this.livenessTimer) clearInterval(this.livenessTimer);
    this.unfollowTemplates?.();
    await this.pool?.close();
    await this.prestartedPools.close();
    await this.templateBuilder.close();
  }

  /**
   * Kill every sandbox and remove the host-wide network and cgroup parents. For tests and `burrow down`:
   * leaves the machine as it was before the orchestrator started.
   */
  async shutdown(): Promise<void> {
    await this.close();
    await Promise.allSettled([...this.sandboxes.keys()].map((id) => this.killSandbox(id)));
    await this.network.teardown();
    await this.cgroups.close();
    stopReaper(reaperPaths(this.config.stateDir));
    await this.storage.unmount();
  }

  /** The template a create names; the shipped code-interpreter, mcp-gateway, desktop and browser are built the first time they are asked for. */
  private async templateFor(ref: string, signal?: AbortSignal): Promise<TemplateManifest> {
    if (isCodeInterpreterTemplate(ref)) return ensureCodeInterpreterTemplate(this.templateBuilder, this.templates, { signal });
    if (isMcpGatewayTemplate(ref)) return ensureMcpGatewayTemplate(this.templateBuilder, this.templates, { signal });
    const shipped = [DESKTOP, BROWSER].find((template) => isShippedTemplate(template, ref));
    if (shipped) {
      const manifest = await ensureShippedTemplate(this.templateBuilder, this.templates, shipped, { signal });
      if (shipped.prestartInPool) this.prestartedPools.use(shipped.name);
      return manifest;
    }
    const template = this.templates.resolve(ref);
    if (template) return template;
    throw new BurrowError(Code.NotFound, `template '${ref}' not found`, { reason: "template_not_found" });
  }

  private async claim(
    sandbox: HostedSandbox,
    template: TemplateManifest,
    limits: SandboxLimits,
    opts: CreateSandboxOptions,
  ): Promise<void> {
    const { record } = sandbox;
    if (!sameLimits(record.limits, limits)) await sandbox.cgroup.setLimits(limits);
    if (record.limits.diskMB !== limits.diskMB) await this.host.setDiskLimit(sandbox, limits.diskMB);
    if (record.allowInternetAccess !== opts.allowInternetAccess) {
      await sandbox.network.setInternetAccess(opts.allowInternetAccess);
    }
    await initEnvd(
      envdAt(record.ip, record.initToken),
      {
        envVars: { ...template.runtime?.env, ...opts.envVars },
        accessToken: opts.envdAccessToken,
        defaultUser: template.runtime?.user ?? "user",
        defaultWorkdir: template.runtime?.workdir ?? "/home/user",
      },
      opts.signal,
    );
    if (!this.prestartedPools.wasStarted(sandbox)) {
      await startTemplateProcess(envdAt(record.ip, opts.envdAccessToken), template, { signal: opts.signal });
    }
    sandbox.record = {
      ...record,
      limits,
      allowInternetAccess: opts.allowInternetAccess,
      startedAt: new Date().toISOString(),
      pooled: false,
    };
    await writeRecord(sandbox.dir, sandbox.record);
  }

  private startPool(): void {
    const { pool } = this.config;
    if (pool.size <= 0) return;
    if (!this.templates.resolve(pool.template)) {
      this.logger.warn({ template: pool.template }, "warm pool template not found; the pool fills once it exists");
    }
    const warm = new WarmPool({
      template: pool.template,
      size: pool.size,
      resolve: (ref) => this.templates.resolve(ref),
      // Pooled sandboxes start with internet access because that is what most creates ask for (E2B's default):
      // claiming one then needs no firewall change. Nothing runs in them until they are claimed.
      launch: (template, signal) =>
        this.host.launch(template, template.defaults, { allowInternetAccess: true, pooled: true, signal }),
      destroy: (sandbox) => this.host.destroy(sandbox),
      logger: this.logger,
    });
    this.pool = warm;
    // A rebuild, a moved tag or a delete of the pool's template: sandboxes of the old build go, new ones come.
    this.unfollowTemplates = this.templates.onChange(() => warm.refresh());
    warm.fill();
  }

  /**
   * After a restart: sandboxes whose init still runs are taken back; everything else a previous run left
   * (dead sandboxes, pooled ones, half-created ones, cgroups and veths without a sandbox) is removed.
   */
  private async adoptOrReap(): Promise<void> {
    const paths = statePaths(this.config.stateDir);
    // One sandbox that cannot be taken back or removed is logged and left for the next start: it never stops
    // this one, nor the others.
    for (const sandboxId of await readdir(paths.sandboxes)) {
      await this.adoptOrReapOne(sandboxId, paths.sandbox(sandboxId)).catch((error: unknown) =>
        this.logger.error({ sandboxId, err: error }, "could not re-adopt or reap a sandbox left by a previous run"),
      );
    }
    for (const sandboxId of await this.cgroups.list()) {
      if (this.sandboxes.has(sandboxId)) continue;
      try {
        const cgroup = await this.cgroups.open(sandboxId);
        await cgroup.killAll(AbortSignal.timeout(10_000)).catch(() => undefined);
        await cgroup.destroy().catch(() => undefined);
      } catch (error) {
        this.logger.error({ sandboxId, err: error }, "could not remove the cgroup of a sandbox left by a previous run");
      }
    }
    await this.network.reapOrphans([...this.sandboxes.keys()]);
  }

  private async adoptOrReapOne(sandboxId: string, dir: string): Promise<void> {
    const record = await readRecord(dir);
    if (!record) {
      await this.reapLeftovers(sandboxId, dir);
      return;
    }
    const cgroup = await this.cgroups.open(sandboxId);
    const network = this.network.adopt(sandboxId, record.ip, record.hostVeth, record.allowInternetAccess);
    const sandbox: HostedSandbox = { record, dir, cgroup, network };
    if (!record.pooled && isSandboxInitAlive(record.pid, record.pidStartTime)) {
      // Bring the freezer in line with the record: a restart may have come between writing it and
      // freezing (pause) or between thawing and writing it (resume).
      const state = record.state ?? "running";
      try {
        if (state === "paused") await cgroup.freeze(AbortSignal.timeout(10_000));
        else await cgroup.thaw(AbortSignal.timeout(10_000));
      } catch (error) {
        this.logger.error({ sandboxId, state, err: error }, "could not restore the freezer state of a re-adopted sandbox");
      }
      this.sandboxes.set(sandboxId, sandbox);
      this.logger.info({ sandboxId, state }, `re-adopted ${state} sandbox`);
    } else {
      this.logger.info({ sandboxId, pooled: record.pooled }, "reaping sandbox left by a previous run");
      await this.host.destroy(sandbox).catch((error: unknown) => this.logger.error({ sandboxId, err: error }, "reap failed"));
    }
  }

  /** A sandbox directory without a record: half created, or half removed. A directory that will not go is logged. */
  private async reapLeftovers(sandboxId: string, dir: string): Promise<void> {
    const cgroup = await this.cgroups.open(sandboxId);
    await cgroup.killAll(AbortSignal.timeout(10_000)).catch(() => undefined);
    await cgroup.destroy().catch(() => undefined);
    await this.host.removeDir(sandboxId, dir);
  }

  private checkLiveness(): void {
    for (const [sandboxId, sandbox] of this.sandboxes) {
      // A frozen (paused) init is alive: frozen tasks keep their pid and start time and are never zombies.
      if (isSandboxInitAlive(sandbox.record.pid, sandbox.record.pidStartTime)) continue;
      this.logger.warn({ sandboxId }, "sandbox init exited; removing the sandbox");
      this.forget(sandboxId);
      void this.host
        .destroy(sandbox)
        .catch((error: unknown) => this.logger.error({ sandboxId, err: error }, "cleanup of exited sandbox failed"))
        .finally(() => this.emitExit(sandboxId, "crashed"));
    }
    // Directories of ended sandboxes that could not be removed are tried again now and then.
    if (this.host.pendingRemovals > 0 && Date.now() - this.removalRetriedAt >= REMOVAL_RETRY_INTERVAL_MS) {
      this.removalRetriedAt = Date.now();
      void this.host.retryRemovals();
    }
  }

  /**
   * Run a pause/resume of one sandbox after any earlier one has settled. Resolves the sandbox's record
   * afterwards, or undefined when the sandbox is unknown (or was killed meanwhile).
   */
  private serialize(sandboxId: string, op: (sandbox: HostedSandbox) => Promise<void>): Promise<SandboxRecord | undefined> {
    const run = async (): Promise<SandboxRecord | undefined> => {
      const sandbox = this.sandboxes.get(sandboxId);
      if (!sandbox) return undefined;
      await op(sandbox);
      return this.sandboxes.get(sandboxId) === sandbox ? toRecord(sandbox) : undefined;
    };
    const result = (this.pending.get(sandboxId) ?? Promise.resolve()).then(run);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.pending.set(sandboxId, settled);
    void settled.then(() => {
      if (this.pending.get(sandboxId) === settled) this.pending.delete(sandboxId);
    });
    return result;
  }

  /**
   * Copy a sandbox's writable layer into a new layer while its processes are frozen (a paused sandbox stays as it
   * is) and save a template manifest stacking it on the layers the sandbox started from. Runs in line with the
   * sandbox's pauses and resumes. Undefined when the sandbox is unknown.
   */
  private async takeSnapshot(
    sandboxId: string,
    name: string | undefined,
    forkOf: string | undefined,
    quota: SnapshotQuota | undefined,
    signal?: AbortSignal,
  ): Promise<SnapshotManifest | undefined> {
    const alias = name !== undefined ? this.snapshotAlias(name) : undefined;
    let manifest: SnapshotManifest | undefined;
    const record = await this.serialize(sandboxId, async (sandbox) => {
      const source = this.sourceOf(sandbox);
      // A charged snapshot is refused before anything is frozen or copied when the writable layer as it is now
      // does not fit the owner's quota; the bytes stay reserved until the manifest that charges them is saved.
      const reservation = quota ? await this.reserveSnapshot(sandbox, quota, forkOf !== undefined, signal) : undefined;
      try {
        manifest = await this.copySnapshot(sandbox, source, alias, forkOf, quota && reservation && { quota, reservation }, signal);
      } finally {
        if (reservation) this.charges.release(reservation);
      }
    });
    return record && manifest;
  }

  private async reserveSnapshot(
    sandbox: HostedSandbox,
    quota: SnapshotQuota,
    forFork: boolean,
    signal?: AbortSignal,
  ): Promise<SnapshotReservation> {
    if (!forFork) this.charges.checkCount(this.templates.list(), sandbox.record.sandboxId, quota);
    const bytes = await diskUsageBytes(`${sandbox.dir}/upper`, signal);
    return this.charges.reserve(this.templates.list(), quota, bytes);
  }

  /** The copy and its manifest (takeSnapshot's work once the snapshot is admitted). */
  private async copySnapshot(
    sandbox: HostedSandbox,
    source: LaunchSource,
    alias: string | undefined,
    forkOf: string | undefined,
    charge: { quota: SnapshotQuota; reservation: SnapshotReservation } | undefined,
    signal?: AbortSignal,
  ): Promise<SnapshotManifest> {
    const { sandboxId } = sandbox.record;
    const wasPaused = sandbox.record.state === "paused";
    let copy: string;
    if (wasPaused) {
      copy = await copyUpper(`${sandbox.dir}/upper`, this.templates.layersRoot, signal);
    } else {
      try {
        await sandbox.cgroup.freeze(signal);
        copy = await copyUpper(`${sandbox.dir}/upper`, this.templates.layersRoot, signal);
      } catch (error) {
        throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be snapshotted: ${(error as Error).message}`, {
          reason: "snapshot_failed",
          cause: error,
        });
      } finally {
        await sandbox.cgroup.thaw().catch((error: unknown) => this.logger.error({ sandboxId, err: error }, "thaw after snapshot failed"));
        this.cpuMarks.delete(sandboxId);
      }
    }
    let sizeBytes: number | undefined;
    if (charge) {
      // What the copy really holds is what gets charged; beyond the quota it goes again.
      try {
        sizeBytes = await diskUsageBytes(copy, signal);
        this.charges.settle(this.templates.list(), charge.quota, charge.reservation, sizeBytes);
      } catch (error) {
        await discardCopy(copy).catch(() => undefined);
        throw error;
      }
    }
    const layerId = randomId();
    const next: SnapshotManifest = {
      templateId: randomId(),
      aliases: alias !== undefined ? [alias] : [],
      layers: [layerId, ...source.layers],
      defaults: { ...sandbox.record.limits },
      createdAt: new Date().toISOString(),
      ...(source.runtime ? { runtime: source.runtime } : {}),
      snapshotOf: sandboxId,
      ...(forkOf !== undefined ? { forkOf } : {}),
      ...(charge ? { owner: charge.quota.owner, sizeBytes } : {}),
    };
    try {
      // The manifest first: garbage collection keeps the layer it names from the moment it appears.
      await this.templates.save(next);
      await commitSnapshotLayer(this.templates.layersRoot, layerId, copy);
    } catch (error) {
      await this.templates.remove(next.templateId).catch(() => undefined);
      await discardCopy(copy).catch(() => undefined);
      throw error;
    }
    if (alias !== undefined) await this.moveAlias(alias, next.templateId);
    this.logger.info(
      { sandboxId, snapshotId: next.templateId, layerId, owner: next.owner, sizeBytes },
      forkOf !== undefined ? "sandbox snapshotted for a fork" : "sandbox snapshotted",
    );
    return next;
  }

  /** End the charges of fork snapshots whose forks have all ended. */
  private async releaseForkBases(): Promise<void> {
    await this.charges
      .releaseForkBases((templateId) => [...this.sandboxes.values()].some((s) => s.record.templateId === templateId))
      .catch((error: unknown) => this.logger.warn({ err: error }, "could not update the snapshot charges ledger"));
  }

  /** Layers, runtime and env vars of a sandbox; for one adopted after a restart, its template's current ones. */
  private sourceOf(sandbox: HostedSandbox): LaunchSource {
    const known = this.sources.get(sandbox.record.sandboxId);
    if (known) return known;
    const template = this.templates.get(sandbox.record.templateId);
    if (!template) {
      throw new BurrowError(
        Code.FailedPrecondition,
        `the template sandbox ${sandbox.record.sandboxId} started from no longer exists, so its files cannot be snapshotted`,
        { reason: "source_template_gone" },
      );
    }
    return { layers: [...template.layers], runtime: template.runtime, envVars: {} };
  }

  /** A snapshot name: a template name without tag (or the default tag); may not be a template's name. */
  private snapshotAlias(name: string): string {
    let parsed: { name: string; tag?: string | undefined };
    try {
      parsed = parseTemplateName(name);
    } catch (error) {
      throw new BurrowError(Code.InvalidArgument, (error as Error).message, { reason: "invalid_snapshot_name", cause: error });
    }
    if (parsed.tag !== undefined && parsed.tag !== "default" && parsed.tag !== "latest") {
      throw new BurrowError(Code.InvalidArgument, `snapshot names take no tag other than 'default', got '${name}'`, {
        reason: "invalid_snapshot_name",
      });
    }
    const existing = this.templates.resolve(parsed.name);
    if (existing && !isSnapshotManifest(existing)) {
      throw new BurrowError(Code.FailedPrecondition, `'${parsed.name}' is the name of a template, not of a snapshot`, {
        reason: "snapshot_name_taken",
      });
    }
    return parsed.name;
  }

  /** A name given to a new snapshot leaves the snapshot that had it (which stays reachable by its id). */
  private async moveAlias(alias: string, toTemplateId: string): Promise<void> {
    for (const manifest of this.templates.list()) {
      if (manifest.templateId === toTemplateId || !manifest.aliases.includes(alias)) continue;
      await this.templates.save({ ...manifest, aliases: manifest.aliases.filter((a) => a !== alias) });
    }
  }

  private async writeState(sandbox: HostedSandbox, state: "running" | "paused"): Promise<void> {
    const record = { ...sandbox.record, state };
    await writeRecord(sandbox.dir, record);
    sandbox.record = record;
  }

  private forget(sandboxId: string): void {
    this.sandboxes.delete(sandboxId);
    this.sources.delete(sandboxId);
    this.cpuMarks.delete(sandboxId);
    this.diskUsage.delete(sandboxId);
  }

  private emitExit(sandboxId: string, reason: SandboxExitReason): void {
    for (const listener of this.exitListeners) {
      try {
        listener(sandboxId, reason);
      } catch (error) {
        this.logger.error({ err: error }, "sandbox exit listener threw");
      }
    }
  }

  private async diskUsed(sandbox: HostedSandbox, signal?: AbortSignal): Promise<number> {
    const cached = this.diskUsage.get(sandbox.record.sandboxId);
    if (cached && Date.now() - cached.at < DISK_USAGE_TTL_MS) return cached.bytes;
    const bytes = await diskUsageBytes(`${sandbox.dir}/upper`, signal);
    this.diskUsage.set(sandbox.record.sandboxId, { bytes, at: Date.now() });
    return bytes;
  }
}

function toRecord(sandbox: HostedSandbox): SandboxRecord {
  const { record } = sandbox;
  return {
    sandboxId: record.sandboxId,
    templateId: record.templateId,
    address: record.ip,
    limits: { ...record.limits },
    allowInternetAccess: record.allowInternetAccess,
    startedAt: new Date(record.startedAt),
    state: record.state ?? "running",
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function sameLimits(a: SandboxLimits, b: SandboxLimits): boolean {
  return a.cpuCount === b.cpuCount && a.memoryMB === b.memoryMB && a.diskMB === b.diskMB && a.pids === b.pids;
}

const LIMIT_RANGES: Record<keyof SandboxLimits, [number, number]> = {
  cpuCount: [0.1, 64],
  memoryMB: [32, 262_144],
  diskMB: [64, 1_048_576],
  pids: [16, 1_000_000],
};

function validateLimits(limits: SandboxLimits): SandboxLimits {
  for (const [key, [min, max]] of Object.entries(LIMIT_RANGES) as [keyof SandboxLimits, [number, number]][]) {
    const value = limits[key];
    if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
      throw new BurrowError(Code.InvalidArgument, `${key} must be a number between ${min} and ${max}, got ${String(value)}`, {
        reason: "invalid_limits",
      });
    }
  }
  return limits;
}
