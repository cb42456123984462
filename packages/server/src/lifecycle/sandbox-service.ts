// The sandbox lifecycle as the control plane sees it: create, extend, pause, resume, kill, time out, and react to
// sandboxes ending on their own. At its timeout a sandbox is killed, or paused when its lifecycle says so
// (sandbox-lifecycle.ts). Paused sandboxes (with their memory, or filesystem-only) do not time out; the operator may
// cap how long they stay (admission.maxPausedSec, none by default). Connect resumes them, and so does the first
// request the gateway routes to a memory-paused one with auto-resume (autoResume below). New and resumed sandboxes
// and snapshots pass admission (admission/) first. Every path that ends a sandbox goes through #remove, so the
// store, timers, metrics, gateway connections and events stay consistent whichever path came first.
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type {
  EgressRuleLists, Orchestrator, PauseKind, SandboxExitReason, SandboxLifecycleEvent as OrchestratorLifecycleEvent, SandboxRecord, VolumeMount,
} from "@burrow/orchestrator";
import { ENVD_VERSION, BurrowError, Code } from "@burrow/protocol";
import { createAdmissionMetrics, type AdmissionMetrics } from "../admission/admission-metrics.js";
import type { BuildAdmissionPolicy } from "../admission/build-admission.js";
import { systemHostCapacity, type HostCapacity } from "../admission/host-capacity.js";
import { SandboxAdmission, type AdmissionTicket } from "../admission/sandbox-admission.js";
import { snapshotOwner, snapshotQuota, snapshotRefusal } from "../admission/snapshot-quota.js";
import type { ServerConfig } from "../config.js";
import { toE2bError } from "../errors.js";
import type { ServerMetrics } from "../metrics/prometheus.js";
import type { SandboxMetrics } from "../metrics/sandbox-metrics.js";
import { copiedNetwork, egressConfigOf, egressListsOf, hasEgressRules, networkView, type SandboxNetworkConfig } from "../network/network-config.js";
import type { SandboxNetworkStore } from "../store/sandbox-networks.js";
import type { SandboxRow, SandboxStore } from "../store/sandboxes.js";
import type { SandboxEndReason, SandboxEvents, SandboxLifecycleEvent, SandboxPauseReason, SandboxResumeReason } from "./events.js";
import { SandboxHolds } from "./sandbox-holds.js";
import { DEFAULT_LIFECYCLE, autoResumable, type SandboxLifecycle } from "./sandbox-lifecycle.js";
import { TimeoutScheduler } from "./timeout-scheduler.js";

export interface CreateSandboxInput {
  /** Template id, alias or `alias:tag`. */
  template: string;
  /** Lifetime in seconds; the server default when absent. */
  timeoutSec?: number;
  metadata?: Record<string, string>;
  /** Passed to the orchestrator only; never stored (they may hold secrets). */
  envVars?: Record<string, string>;
  allowInternetAccess?: boolean;
  apiKeyId?: number | null;
  /** Names of the MCP servers the create body's `mcp` configures (kept; their configs are not). */
  mcpServers?: string[];
  /** What its timeout does and whether traffic resumes it. @default DEFAULT_LIFECYCLE (killed at its timeout) */
  lifecycle?: SandboxLifecycle;
  /** E2B's network config: its allowOut/denyOut are enforced before the sandbox is handed out; kept with its row. */
  network?: SandboxNetworkConfig;
  /** Volumes bound into the sandbox (checked and held by the caller: VolumeService.reserveMounts). */
  volumeMounts?: VolumeMount[];
  /** Called once the sandbox's row is stored, inside the same failure handling (a throw kills the sandbox). */
  onRecorded?: (sandboxId: string) => void;
  signal?: AbortSignal;
}

export interface PauseOptions {
  /** Keep memory (default) or pause filesystem-only (processes end; resume cold-boots). */
  memory?: boolean;
}

export interface ConnectOptions {
  /** false: resume a paused sandbox by a cold boot even when its memory was kept (E2B's `onResume: 'reboot'`). */
  memory?: boolean;
}

export interface ForkSandboxInput {
  /** Lifetime of each fork in seconds; the server default when absent. */
  timeoutSec?: number;
  /** Number of forks; 1 when absent. */
  count?: number;
  apiKeyId?: number | null;
  signal?: AbortSignal;
}

/** One fork's outcome: the registered sandbox, or why it did not start (an HTTP status and message). */
export type ForkOutcome = { row: SandboxRow; error?: undefined } | { row?: undefined; error: { code: number; message: string } };

type SnapshotInfo = NonNullable<Awaited<ReturnType<NonNullable<Orchestrator["snapshotSandbox"]>>>>;

type EndReason = SandboxEndReason;

export interface SandboxServiceDeps {
  config: ServerConfig;
  store: SandboxStore;
  orchestrator: Orchestrator;
  events: SandboxEvents;
  metrics: ServerMetrics;
  sandboxMetrics: SandboxMetrics;
  logger: Logger;
  /** What the host has left, for admission. @default the running host, with the state directory's disk */
  host?: HostCapacity;
  /** Network configs (E2B's `network`) of sandboxes: created with their rows, copied to forks. */
  networks?: SandboxNetworkStore;
  /** The anchor key of a key's team (snapshot-quota.ts): snapshots are charged per team. @default the key itself */
  snapshotAnchorKey?: (keyId: number) => number | undefined;
}

/** An error of a dependency as E2B's `{code, message}` (the HTTP status and its message). */
function errorStatus(err: unknown): { status: number; message: string } {
  const { status, body } = toE2bError(err);
  return { status, message: body.message };
}

/** 24 random bytes as hex: unguessable, and safe in headers and in the signature's `:`-joined string. */
function newAccessToken(): string {
  return randomBytes(24).toString("hex");
}

export class SandboxService {
  readonly #d: SandboxServiceDeps;
  readonly #scheduler: TimeoutScheduler;
  readonly #removedListeners = new Set<(sandboxId: string) => void>();
  readonly #pausedListeners = new Set<(sandboxId: string) => void>();
  /** Pause/resume/connect in progress per sandbox (settled promise): they run one at a time per sandbox. */
  readonly #pending = new Map<string, Promise<void>>();
  readonly #unsubscribeExit: () => void;
  readonly #unsubscribeOrchestratorEvents: () => void;
  /** Auto-resumes under way: concurrent requests to one paused sandbox share one. */
  readonly #autoResumes = new Map<string, Promise<{ row: SandboxRow; record: SandboxRecord }>>();
  /** Running sandboxes briefly down for an operation that brings them back (a rollback): the gateway waits for it. */
  readonly holds = new SandboxHolds();
  readonly #admission: SandboxAdmission;
  readonly #admissionMetrics: AdmissionMetrics;
  /** Build admission for the template routes: template limits against the host, builds at once. */
  readonly buildAdmission: BuildAdmissionPolicy;

  constructor(deps: SandboxServiceDeps) {
    this.#d = deps;
    this.#scheduler = new TimeoutScheduler((id) => void this.#expire(id));
    this.#unsubscribeExit = deps.orchestrator.onSandboxExit((id, reason) => this.#onExit(id, reason));
    this.#unsubscribeOrchestratorEvents =
      deps.orchestrator.onSandboxLifecycleEvent?.((event) => this.#onOrchestratorEvent(event)) ?? (() => undefined);
    const { admission } = deps.config;
    const metrics = createAdmissionMetrics(deps.metrics.registry, {
      snapshotUsage: () => deps.orchestrator.snapshotUsage?.() ?? [],
      snapshotLimitBytes: admission.snapshotQuotaMB * 2 ** 20,
    });
    this.#admissionMetrics = metrics;
    this.#admission = new SandboxAdmission({
      config: admission,
      host: deps.host ?? systemHostCapacity(deps.config.stateDir),
      totals: () => deps.store.totals(),
      onRefused: (reason) => metrics.refused(reason),
    });
    this.buildAdmission = {
      maxConcurrentBuilds: admission.maxConcurrentBuilds,
      checkSize: (limits) => this.#admission.checkSize(limits),
      refused: (reason) => metrics.refused(reason),
    };
  }

  /**
   * Called synchronously when a sandbox stops being routable, before the orchestrator has finished killing
   * it: the gateway drops in-flight connections here so clients see the sandbox go away.
   */
  onRemoved(listener: (sandboxId: string) => void): () => void {
    this.#removedListeners.add(listener);
    return () => this.#removedListeners.delete(listener);
  }

  /**
   * Called synchronously when a sandbox is being paused, before it is frozen: it stops being routable (the
   * gateway answers 502 and drops in-flight connections) but is not gone; a resume makes it routable again.
   */
  onPaused(listener: (sandboxId: string) => void): () => void {
    this.#pausedListeners.add(listener);
    return () => this.#pausedListeners.delete(listener);
  }

  get(sandboxId: string): SandboxRow | undefined {
    return this.#d.store.get(sandboxId);
  }

  /** A row that must exist, else `not_found` in E2B's words. */
  require(sandboxId: string): SandboxRow {
    const row = this.#d.store.get(sandboxId);
    if (!row) throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    return row;
  }

  list(): SandboxRow[] {
    return this.#d.store.list();
  }

  /** The row and the orchestrator's live record, when the sandbox can take traffic. */
  live(sandboxId: string): { row: SandboxRow; record: SandboxRecord } | undefined {
    const row = this.#d.store.get(sandboxId);
    if (!row || row.state !== "running") return undefined;
    const record = this.#d.orchestrator.getSandbox(sandboxId);
    return record && { row, record };
  }

  async create(input: CreateSandboxInput): Promise<SandboxRow> {
    const { config, orchestrator, metrics } = this.#d;
    const timeoutSec = this.#checkTimeout(input.timeoutSec ?? config.defaultTimeoutSec);
    // The template is not required to resolve here: the orchestrator may build some on first use. An unknown one
    // comes back as `not_found`, which E2B answers as 404 `template '<x>' not found` (the SDK: SandboxError).
    const defaults = orchestrator.resolveTemplate(input.template)?.defaults;
    let ticket: AdmissionTicket;
    try {
      ticket = await this.#admission.admitNew({ count: 1, memoryMB: defaults?.memoryMB, cpuCount: defaults?.cpuCount }, input.signal);
    } catch (err) {
      metrics.sandboxCreates.inc({ result: "error" });
      throw err;
    }
    try {
      return await this.#create(input, timeoutSec);
    } finally {
      // Recorded (the store counts it now) or failed: either way its place is no longer held.
      ticket.release();
    }
  }

  async #create(input: CreateSandboxInput, timeoutSec: number): Promise<SandboxRow> {
    const { config, orchestrator, metrics } = this.#d;
    const envdAccessToken = newAccessToken();
    const stopTimer = metrics.createDuration.startTimer();
    let record: SandboxRecord;
    try {
      record = await orchestrator.createSandbox({
        template: input.template,
        allowInternetAccess: input.allowInternetAccess ?? true,
        ...this.#egressOption(input.network),
        envVars: input.envVars ?? {},
        envdAccessToken,
        ...(input.volumeMounts?.length ? { volumeMounts: input.volumeMounts } : {}),
        ...(input.signal ? { signal: input.signal } : {}),
      });
    } catch (err) {
      stopTimer({ result: "error" });
      metrics.sandboxCreates.inc({ result: "error" });
      throw err;
    }
    const now = new Date();
    const row: SandboxRow = {
      sandboxId: record.sandboxId,
      templateId: record.templateId,
      alias: this.#aliasOf(input.template, record.templateId),
      clientId: config.clientId,
      metadata: input.metadata ?? {},
      cpuCount: record.limits.cpuCount,
      memoryMB: record.limits.memoryMB,
      diskSizeMB: record.limits.diskMB,
      startedAt: record.startedAt,
      endAt: new Date(now.getTime() + timeoutSec * 1000),
      state: "running",
      envdVersion: ENVD_VERSION,
      envdAccessToken,
      allowInternetAccess: record.allowInternetAccess,
      apiKeyId: input.apiKeyId ?? null,
      mcpServers: input.mcpServers ?? null,
      lifecycle: input.lifecycle ?? DEFAULT_LIFECYCLE,
      timeoutSec,
      pauseKind: null,
    };
    try {
      if (input.signal?.aborted) throw new BurrowError(Code.Canceled, "client went away during create");
      this.#d.store.insert(row);
      if (input.network) this.#d.networks?.put(row.sandboxId, input.network, row.allowInternetAccess);
      input.onRecorded?.(row.sandboxId);
    } catch (err) {
      // Nobody will ever learn this sandbox's id: do not leave it running.
      stopTimer({ result: "error" });
      metrics.sandboxCreates.inc({ result: "error" });
      await orchestrator.killSandbox(record.sandboxId).catch((killErr: unknown) => {
        this.#d.logger.error({ err: killErr, sandboxId: record.sandboxId }, "could not kill unrecorded sandbox");
      });
      throw err;
    }
    stopTimer({ result: "ok" });
    metrics.sandboxCreates.inc({ result: "ok" });
    this.#scheduler.arm(row.sandboxId, row.endAt);
    this.#d.sandboxMetrics.track(row.sandboxId);
    this.#d.logger.info({ sandboxId: row.sandboxId, templateId: row.templateId, endAt: row.endAt }, "sandbox created");
    this.#emit("created", row, { network: this.#eventNetwork(row, input.network) });
    return row;
  }

  /**
   * Snapshot a sandbox's files into a template (`Sandbox.create(snapshotId)`); processes and memory are not kept.
   * A paused sandbox can be snapshotted and stays paused.
   */
  async snapshot(sandboxId: string, name?: string): Promise<SnapshotInfo> {
    const row = this.require(sandboxId);
    const { orchestrator } = this.#d;
    if (!orchestrator.snapshotSandbox) throw new BurrowError(Code.Unimplemented, "snapshots are not supported by this orchestrator");
    let info: SnapshotInfo | undefined;
    try {
      info = await orchestrator.snapshotSandbox(sandboxId, {
        ...(name !== undefined ? { name } : {}),
        quota: this.snapshotQuotaOf(row),
      });
    } catch (err) {
      throw this.#snapshotFailed(err, sandboxId, "orchestrator failed to snapshot sandbox");
    }
    if (!info) throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    // Sandboxes started from it get the network the sandbox has now (header transforms and user's proxy too).
    const network = this.#d.networks?.get(sandboxId);
    if (network && hasEgressRules(network)) this.#d.networks?.keepCopy(info.snapshotId, egressConfigOf(network));
    this.#d.logger.info({ sandboxId, snapshotId: info.snapshotId }, "sandbox snapshotted");
    return info;
  }

  /** Snapshots, newest first; optionally only those of one sandbox. */
  listSnapshots(filter: { sandboxId?: string | undefined } = {}): SnapshotInfo[] {
    const { orchestrator } = this.#d;
    if (!orchestrator.listSnapshots) throw new BurrowError(Code.Unimplemented, "snapshots are not supported by this orchestrator");
    return orchestrator.listSnapshots().filter((s) => filter.sandboxId === undefined || s.sandboxId === filter.sandboxId);
  }

  /**
   * Fork a sandbox: its files are snapshotted once and `count` sandboxes start from them, each registered like a
   * created one (metadata copied from the source, its own lifetime and access token). Processes are not copied.
   * Each fork succeeds or fails on its own.
   */
  async fork(sandboxId: string, input: ForkSandboxInput = {}): Promise<ForkOutcome[]> {
    const source = this.require(sandboxId);
    const { config, orchestrator } = this.#d;
    if (!orchestrator.forkSandbox) throw new BurrowError(Code.Unimplemented, "forking sandboxes is not supported by this orchestrator");
    const timeoutSec = this.#checkTimeout(input.timeoutSec ?? config.defaultTimeoutSec);
    const count = input.count ?? 1;
    // Forks are new sandboxes: all of them are admitted, or none.
    const ticket = await this.#admission.admitNew({ count, memoryMB: source.memoryMB }, input.signal);
    try {
      return await this.#fork(source, count, timeoutSec, input);
    } finally {
      ticket.release();
    }
  }

  async #fork(source: SandboxRow, count: number, timeoutSec: number, input: ForkSandboxInput): Promise<ForkOutcome[]> {
    const { config, orchestrator, metrics } = this.#d;
    const { sandboxId } = source;
    if (!orchestrator.forkSandbox) throw new BurrowError(Code.Unimplemented, "forking sandboxes is not supported by this orchestrator");
    const tokens: string[] = [];
    // Forks are restricted as their source (the orchestrator copies its firewall rules) and keep its ingress.
    const sourceNetwork = this.#d.networks?.get(sandboxId);
    let results: Awaited<ReturnType<NonNullable<Orchestrator["forkSandbox"]>>>;
    try {
      results = await orchestrator.forkSandbox(sandboxId, {
        count,
        forkOptions: (index) => {
          const envdAccessToken = newAccessToken();
          tokens[index] = envdAccessToken;
          return { envVars: {}, envdAccessToken };
        },
        // The hidden snapshot the forks start from is charged to the source's owner.
        quota: this.snapshotQuotaOf(source),
        ...(input.signal ? { signal: input.signal } : {}),
      });
    } catch (err) {
      throw this.#snapshotFailed(err, sandboxId, "orchestrator failed to fork sandbox");
    }
    if (!results) throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    const outcomes: ForkOutcome[] = [];
    for (const [index, result] of results.entries()) {
      const token = tokens[index];
      if (result.error || token === undefined) {
        metrics.sandboxCreates.inc({ result: "error" });
        const { status, message } = errorStatus(result.error ?? new Error("fork failed"));
        outcomes.push({ error: { code: status, message } });
        continue;
      }
      const record = result.sandbox;
      const row: SandboxRow = {
        sandboxId: record.sandboxId,
        // Forks count as sandboxes of the source's template: their own snapshot template is internal.
        templateId: source.templateId,
        alias: source.alias,
        clientId: config.clientId,
        metadata: { ...source.metadata },
        cpuCount: record.limits.cpuCount,
        memoryMB: record.limits.memoryMB,
        diskSizeMB: record.limits.diskMB,
        startedAt: record.startedAt,
        endAt: new Date(Date.now() + timeoutSec * 1000),
        state: "running",
        envdVersion: ENVD_VERSION,
        envdAccessToken: token,
        allowInternetAccess: record.allowInternetAccess,
        apiKeyId: input.apiKeyId ?? source.apiKeyId,
        // A fork is a copy: it pauses (or dies) at its timeout as its source would.
        lifecycle: source.lifecycle ?? DEFAULT_LIFECYCLE,
        timeoutSec,
        pauseKind: null,
      };
      const network = copiedNetwork(sourceNetwork);
      try {
        if (input.signal?.aborted) throw new BurrowError(Code.Canceled, "client went away during fork");
        this.#d.store.insert(row);
        if (network) this.#d.networks?.put(row.sandboxId, network, row.allowInternetAccess);
      } catch (err) {
        metrics.sandboxCreates.inc({ result: "error" });
        await orchestrator.killSandbox(record.sandboxId).catch((killErr: unknown) => {
          this.#d.logger.error({ err: killErr, sandboxId: record.sandboxId }, "could not kill unrecorded fork");
        });
        const { status, message } = errorStatus(err);
        outcomes.push({ error: { code: status, message } });
        continue;
      }
      metrics.sandboxCreates.inc({ result: "ok" });
      this.#scheduler.arm(row.sandboxId, row.endAt);
      this.#d.sandboxMetrics.track(row.sandboxId);
      this.#d.logger.info({ sandboxId: row.sandboxId, forkOf: sandboxId, endAt: row.endAt }, "sandbox forked");
      // The bus has a `forked` type, but the control plane's event types map one to one onto it in bus/; until
      // that mapping knows `forked`, a fork is announced as the creation it is.
      this.#emit("created", row, { network: this.#eventNetwork(row, network) });
      outcomes.push({ row });
    }
    return outcomes;
  }

  /** Kill a sandbox. False when it does not exist (or another path is already ending it). */
  async kill(sandboxId: string, reason: EndReason = "api"): Promise<boolean> {
    const row = this.#remove(sandboxId, reason === "timeout" ? "timed_out" : "killed", reason);
    if (!row) return false;
    try {
      await this.#d.orchestrator.killSandbox(sandboxId);
    } catch (err) {
      // The row is gone already, so the sandbox is unreachable; the next start's reconcile reaps leftovers.
      this.#d.logger.error({ err, sandboxId }, "orchestrator failed to kill sandbox");
      throw err;
    }
    return true;
  }

  /**
   * Remove this node's copy of a sandbox another node has taken over (a drain's move): it stops being routable here
   * and the orchestrator's copy goes, but the sandbox did not end, so no `killed` is sent (the taking node sends
   * `moved`): owner records, team streams and dashboards see a move, not an end. False when there was no row.
   */
  async removeMovedAway(sandboxId: string): Promise<boolean> {
    const row = this.#d.store.get(sandboxId);
    if (!row || !this.#d.store.delete(sandboxId)) return false;
    this.#scheduler.cancel(sandboxId);
    this.#d.sandboxMetrics.untrack(sandboxId);
    this.#notify(this.#removedListeners, sandboxId, "sandbox removal listener failed");
    this.#d.logger.info({ sandboxId }, "sandbox moved to another node; this node's copy removed");
    await this.#d.orchestrator.killSandbox(sandboxId);
    return true;
  }

  /** Set endAt = now + timeout (E2B: overwrites, may shorten). A paused sandbox keeps it but has no timer. */
  setTimeout(sandboxId: string, timeoutSec: number): SandboxRow {
    const row = this.require(sandboxId);
    const endAt = new Date(Date.now() + this.#checkTimeout(timeoutSec) * 1000);
    this.#d.store.setEndAt(sandboxId, endAt);
    if (row.state === "running") this.#scheduler.arm(sandboxId, endAt);
    return { ...row, endAt };
  }

  /**
   * Pause a running sandbox: with its memory (default) or filesystem-only (`memory: false`). It stops being routable
   * at once, its timeout no longer applies (the operator's maximum paused time does, if set) and then the
   * orchestrator pauses it. 409 when already paused.
   */
  async pause(sandboxId: string, opts: PauseOptions = {}): Promise<SandboxRow> {
    return this.#serial(sandboxId, () => this.#pause(this.require(sandboxId), opts.memory ?? true, "api"));
  }

  async #pause(row: SandboxRow, memory: boolean, reason: SandboxPauseReason): Promise<SandboxRow> {
    const { sandboxId } = row;
    if (row.state === "paused") throw new BurrowError(Code.AlreadyExists, `sandbox "${sandboxId}" is already paused`);
    const { orchestrator, store } = this.#d;
    if (!orchestrator.pauseSandbox) throw new BurrowError(Code.Unimplemented, "pausing sandboxes is not supported by this orchestrator");
    const pausedAt = new Date();
    const asked: PauseKind = memory ? "memory" : "filesystem";
    store.setState(sandboxId, "paused", pausedAt, asked);
    this.#scheduler.cancel(sandboxId);
    this.#notify(this.#pausedListeners, sandboxId, "sandbox pause listener failed");
    let record: SandboxRecord | undefined;
    try {
      record = await orchestrator.pauseSandbox(sandboxId, { memory });
    } catch (err) {
      // Still running: routable again, with the lifetime it had.
      if (store.setState(sandboxId, "running")) this.#scheduler.arm(sandboxId, row.endAt);
      this.#d.logger.error({ err, sandboxId }, "orchestrator failed to pause sandbox");
      throw err;
    }
    if (!record) {
      this.#remove(sandboxId, "killed", "lost");
      throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    }
    // The orchestrator says how it paused; one that does not report it only knows how to freeze.
    const pauseKind = record.pause?.kind ?? "memory";
    if (pauseKind !== asked) store.setPauseKind(sandboxId, pauseKind);
    const paused: SandboxRow = { ...row, state: "paused", pausedAt, pauseKind };
    // A kill may have removed it meanwhile; then there is nothing to announce.
    if (store.get(sandboxId)) {
      this.#armPausedExpiry(sandboxId, pausedAt);
      this.#d.logger.info({ sandboxId, pauseKind, reason }, "sandbox paused");
      this.#emit("paused", paused, { reason, pauseKind });
    }
    return paused;
  }

  /**
   * Connect (E2B `connect`, legacy `resume`). A running sandbox's lifetime is only ever extended, to now + timeout.
   * A paused one is resumed with endAt = now + timeout; `resumed` tells the two apart (200 vs 201). The lifecycle
   * chosen at create stays as it was.
   */
  async connect(sandboxId: string, timeoutSec: number | undefined, opts: ConnectOptions = {}): Promise<{ row: SandboxRow; resumed: boolean }> {
    return this.#serial(sandboxId, async () => {
      const row = this.require(sandboxId);
      const timeout = this.#checkTimeout(timeoutSec ?? this.#d.config.defaultTimeoutSec);
      if (row.state === "running") {
        const wanted = new Date(Date.now() + timeout * 1000);
        if (wanted <= row.endAt) return { row, resumed: false };
        this.#d.store.setEndAt(sandboxId, wanted);
        this.#scheduler.arm(sandboxId, wanted);
        return { row: { ...row, endAt: wanted }, resumed: false };
      }
      return { row: await this.#resume(row, timeout, opts.memory ?? true, "api"), resumed: true };
    });
  }

  /** Whether the gateway may resume this sandbox for a request routed to it (see SandboxLifecycle.autoResume). */
  autoResumable(sandboxId: string): boolean {
    const row = this.#d.store.get(sandboxId);
    return row !== undefined && autoResumable(row);
  }

  /**
   * Resume a memory-paused sandbox with auto-resume for the traffic routed to it, and return it live. Concurrent
   * callers share one resume; its timeout starts again from the create's, as a connect's would. Failures are
   * BurrowErrors: not_found when it is gone, failed_precondition when it is (now) paused in a way traffic cannot
   * resume, and whatever admission or the orchestrator answered.
   */
  autoResume(sandboxId: string): Promise<{ row: SandboxRow; record: SandboxRecord }> {
    const pending = this.#autoResumes.get(sandboxId);
    if (pending) return pending;
    const resume = this.#serial(sandboxId, async () => {
      const row = this.require(sandboxId);
      if (row.state === "paused") {
        if (!autoResumable(row)) {
          throw new BurrowError(
            Code.FailedPrecondition,
            `sandbox "${sandboxId}" is paused without auto-resume (or filesystem-only); connect resumes it`,
          );
        }
        await this.#resume(row, row.timeoutSec ?? this.#d.config.defaultTimeoutSec, true, "auto_resume");
      }
      const live = this.live(sandboxId);
      if (!live) throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
      return live;
    });
    this.#autoResumes.set(sandboxId, resume);
    const forget = () => {
      if (this.#autoResumes.get(sandboxId) === resume) this.#autoResumes.delete(sandboxId);
    };
    resume.then(forget, forget);
    return resume;
  }

  async #resume(row: SandboxRow, timeoutSec: number, memory: boolean, reason: SandboxResumeReason): Promise<SandboxRow> {
    const { orchestrator, store } = this.#d;
    const { sandboxId } = row;
    if (!orchestrator.resumeSandbox) throw new BurrowError(Code.Unimplemented, "resuming sandboxes is not supported by this orchestrator");
    await this.#admission.admitResume();
    let record: SandboxRecord | undefined;
    try {
      record = await orchestrator.resumeSandbox(sandboxId, memory ? {} : { memory: false });
    } catch (err) {
      this.#d.logger.error({ err, sandboxId }, "orchestrator failed to resume sandbox");
      throw err;
    }
    if (!record) {
      this.#remove(sandboxId, "killed", "lost");
      throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    }
    const endAt = new Date(Date.now() + timeoutSec * 1000);
    // A kill may have removed the row while the orchestrator thawed; that kill wins.
    if (!store.setState(sandboxId, "running")) {
      throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    }
    store.setEndAt(sandboxId, endAt);
    this.#scheduler.arm(sandboxId, endAt);
    const resumed: SandboxRow = { ...row, state: "running", endAt, pausedAt: null, pauseKind: null };
    this.#d.logger.info({ sandboxId, endAt, reason, from: row.pauseKind ?? "memory" }, "sandbox resumed");
    this.#emit("resumed", resumed, { reason });
    return resumed;
  }

  /**
   * A sandbox another node had, taken over by this one (cluster/sandbox-moves.ts): `start` makes it this
   * orchestrator's, filesystem-paused; then its row is stored as it was there (paused, same id, token and lifecycle)
   * and a `moved` event names both nodes. Connect resumes it as any filesystem pause.
   */
  async adoptMoved(row: SandboxRow, move: { from: string; to: string; network?: SandboxNetworkConfig | undefined }, start: () => Promise<unknown>): Promise<SandboxRow> {
    const { sandboxId } = row;
    return this.#serial(sandboxId, async () => {
      const { store, orchestrator } = this.#d;
      if (store.get(sandboxId)) throw new BurrowError(Code.AlreadyExists, `sandbox "${sandboxId}" is already on this node`, { reason: "sandbox_exists" });
      await start();
      const pausedAt = new Date();
      const paused: SandboxRow = { ...row, state: "paused", pausedAt, pauseKind: "filesystem" };
      try {
        store.insert(paused);
        store.setState(sandboxId, "paused", pausedAt, "filesystem");
        if (move.network) this.#d.networks?.put(sandboxId, move.network, row.allowInternetAccess);
      } catch (err) {
        store.delete(sandboxId);
        await orchestrator.killSandbox(sandboxId).catch((killErr: unknown) => this.#d.logger.error({ err: killErr, sandboxId }, "could not kill an unrecorded moved sandbox"));
        throw err;
      }
      this.#armPausedExpiry(sandboxId, pausedAt);
      this.#d.sandboxMetrics.track(sandboxId);
      this.#d.logger.info({ sandboxId, from: move.from, to: move.to }, "sandbox moved here (filesystem-paused)");
      this.#emit("moved", paused, { from: move.from, to: move.to });
      return paused;
    });
  }

  /**
   * Make the store agree with the orchestrator after a (re)start: rows whose sandbox is gone are removed,
   * live sandboxes nobody recorded are killed (no client can know their id or token), the rest are re-armed.
   * A memory pause the orchestrator turned into a filesystem pause while the server was away (a host restart) is
   * recorded and announced like one it converts while the server runs.
   */
  async reconcile(): Promise<{ removed: string[]; killedOrphans: string[] }> {
    const { orchestrator, store, logger } = this.#d;
    const live = new Map(orchestrator.listSandboxes().map((r) => [r.sandboxId, r]));
    const removed: string[] = [];
    for (const row of store.list()) {
      const record = live.get(row.sandboxId);
      if (record) {
        // The store decides whether a sandbox is paused; the orchestrator follows it (a restart may have come
        // in the middle of a pause or resume).
        await this.#converge(row, record);
        if (row.state === "running") this.#scheduler.arm(row.sandboxId, row.endAt);
        else this.#armPausedExpiry(row.sandboxId, this.#pausedSince(row));
        this.#d.sandboxMetrics.track(row.sandboxId);
      } else if (this.#remove(row.sandboxId, "killed", "lost")) {
        removed.push(row.sandboxId);
      }
    }
    const killedOrphans: string[] = [];
    for (const id of live.keys()) {
      if (store.get(id)) continue;
      killedOrphans.push(id);
      await orchestrator.killSandbox(id).catch((err: unknown) => logger.error({ err, sandboxId: id }, "could not kill orphan sandbox"));
    }
    if (removed.length || killedOrphans.length) logger.info({ removed, killedOrphans }, "reconciled sandboxes with orchestrator");
    return { removed, killedOrphans };
  }

  close(): void {
    this.#unsubscribeExit();
    this.#unsubscribeOrchestratorEvents();
    this.#scheduler.close();
    this.#removedListeners.clear();
    this.#pausedListeners.clear();
  }

  async #converge(row: SandboxRow, record: SandboxRecord): Promise<void> {
    const { orchestrator, logger } = this.#d;
    if (row.state === record.state) {
      const kind = record.pause?.kind;
      if (row.state === "paused" && kind && kind !== row.pauseKind) {
        this.#d.store.setPauseKind(row.sandboxId, kind);
        if (kind === "filesystem") this.#converted(row, "host_restart");
      }
      return;
    }
    try {
      if (row.state === "paused") await orchestrator.pauseSandbox?.(row.sandboxId, { memory: row.pauseKind !== "filesystem" });
      else await orchestrator.resumeSandbox?.(row.sandboxId);
      logger.info({ sandboxId: row.sandboxId, state: row.state }, "brought the orchestrator in line with the store");
    } catch (err) {
      logger.error({ err, sandboxId: row.sandboxId, state: row.state }, "could not bring the orchestrator in line with the store");
    }
  }

  /** Events the orchestrator decided on its own: a memory pause converted to a filesystem pause. */
  #onOrchestratorEvent(event: OrchestratorLifecycleEvent): void {
    if (event.type !== "pause_converted") return;
    const row = this.#d.store.get(event.sandboxId);
    if (!row || row.state !== "paused" || row.pauseKind === event.to) return;
    this.#d.store.setPauseKind(event.sandboxId, event.to);
    this.#converted(row, event.reason);
  }

  #converted(row: SandboxRow, reason: "age" | "host_restart"): void {
    this.#d.logger.info({ sandboxId: row.sandboxId, reason }, "memory pause converted to a filesystem pause");
    this.#emit("pause_converted", { ...row, pauseKind: "filesystem" }, { reason, pauseKind: "filesystem" });
  }

  /** Run `op` after every earlier pause/resume/connect of the same sandbox has settled. */
  #serial<T>(sandboxId: string, op: () => Promise<T>): Promise<T> {
    const result = (this.#pending.get(sandboxId) ?? Promise.resolve()).then(op);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.#pending.set(sandboxId, settled);
    void settled.then(() => {
      if (this.#pending.get(sandboxId) === settled) this.#pending.delete(sandboxId);
    });
    return result;
  }

  #notify(listeners: ReadonlySet<(sandboxId: string) => void>, sandboxId: string, failure: string): void {
    for (const listener of listeners) {
      try {
        listener(sandboxId);
      } catch (err) {
        this.#d.logger.error({ err, sandboxId }, failure);
      }
    }
  }

  /** The alias a sandbox was created by (`base` for `base:latest`), else the template's first alias. */
  #aliasOf(ref: string, templateId: string): string | null {
    const template = this.#d.orchestrator.resolveTemplate(templateId) ?? this.#d.orchestrator.resolveTemplate(ref);
    if (!template) return null;
    const name = ref.split(":")[0]!;
    return template.aliases.includes(name) ? name : (template.aliases[0] ?? null);
  }

  /** The quota a sandbox's snapshots (and checkpoints) are charged against: its team's. */
  snapshotQuotaOf(row: SandboxRow) {
    return snapshotQuota(this.#d.config.admission, snapshotOwner(row.apiKeyId, this.#d.snapshotAnchorKey));
  }

  /** A failed snapshot or fork: quota refusals are answers (507 or 429), anything else is logged as a failure. */
  #snapshotFailed(err: unknown, sandboxId: string, failure: string): unknown {
    const refusal = snapshotRefusal(err);
    if (refusal) {
      this.#admissionMetrics.refused(refusal);
      this.#d.logger.info({ sandboxId, reason: (err as Error).message }, "snapshot refused");
      return err;
    }
    this.#d.logger.error({ err, sandboxId }, failure);
    return err;
  }

  /** A paused sandbox is killed like a timed-out one once it has been paused for the maximum time. */
  /** A paused sandbox has no timeout; only the operator's maximum paused time, if set, ends it. */
  #armPausedExpiry(sandboxId: string, pausedAt: Date): void {
    const { maxPausedSec } = this.#d.config.admission;
    if (maxPausedSec > 0) this.#scheduler.arm(sandboxId, new Date(pausedAt.getTime() + maxPausedSec * 1000));
  }

  /** When a paused row was paused; rows paused before this was recorded start their clock now. */
  #pausedSince(row: SandboxRow): Date {
    if (row.pausedAt) return row.pausedAt;
    const now = new Date();
    this.#d.store.setState(row.sandboxId, "paused", now, row.pauseKind ?? "memory");
    return now;
  }

  #checkTimeout(timeoutSec: number): number {
    if (!Number.isInteger(timeoutSec) || timeoutSec < 0) {
      throw new BurrowError(Code.InvalidArgument, `timeout must be a non-negative integer number of seconds, got ${timeoutSec}`);
    }
    if (timeoutSec > this.#d.config.maxTimeoutSec) {
      throw new BurrowError(Code.InvalidArgument, `timeout cannot be greater than ${this.#d.config.maxTimeoutSec} seconds`);
    }
    return timeoutSec;
  }

  /**
   * A sandbox's timer fired: a running one is paused when its lifecycle says so, else killed; a paused one has been
   * paused for the maximum time and is killed.
   */
  async #expire(sandboxId: string): Promise<void> {
    const row = this.#d.store.get(sandboxId);
    if (row?.state === "running" && row.lifecycle?.autoPause && this.#d.orchestrator.pauseSandbox) {
      const paused = await this.#serial(sandboxId, async () => {
        const current = this.#d.store.get(sandboxId);
        // A connect or setTimeout may have moved endAt while this waited its turn (and re-armed the timer).
        if (current?.state !== "running" || current.endAt.getTime() > Date.now()) return true;
        await this.#pause(current, current.lifecycle?.autoPauseMemory ?? true, "timeout");
        return true;
      }).catch((err: unknown) => {
        this.#d.logger.error({ err, sandboxId }, "pause at timeout failed; killing the sandbox instead");
        return false;
      });
      if (paused) return;
    }
    try {
      await this.kill(sandboxId, "timeout");
    } catch (err) {
      this.#d.logger.error({ err, sandboxId }, "timeout kill failed");
    }
  }

  #onExit(sandboxId: string, reason: SandboxExitReason): void {
    // Kills through the API removed the row first, so this only acts on sandboxes that ended by themselves.
    this.#remove(sandboxId, "killed", reason === "crashed" ? "crashed" : "orchestrator");
  }

  /** Make a sandbox unreachable and forget it; returns the row when this call removed it. */
  #remove(sandboxId: string, type: "killed" | "timed_out", reason: EndReason): SandboxRow | undefined {
    const row = this.#d.store.get(sandboxId);
    if (!row || !this.#d.store.delete(sandboxId)) return undefined;
    this.#scheduler.cancel(sandboxId);
    this.#d.sandboxMetrics.untrack(sandboxId);
    this.#d.metrics.sandboxKills.inc({ reason });
    this.#notify(this.#removedListeners, sandboxId, "sandbox removal listener failed");
    this.#d.logger.info({ sandboxId, reason }, "sandbox ended");
    this.#emit(type, row, { reason });
    return row;
  }

  /** The orchestrator's create option for a config's allowOut/denyOut (none without rules). */
  #egressOption(network: SandboxNetworkConfig | undefined): { egress?: EgressRuleLists } {
    const egress = egressListsOf(network);
    return egress ? { egress } : {};
  }

  /** A created sandbox's network for its event: what the firewall enforces (the record's switch) and the config. */
  #eventNetwork(row: SandboxRow, network: SandboxNetworkConfig | undefined): NonNullable<SandboxLifecycleEvent["network"]> {
    return { allowInternetAccess: row.allowInternetAccess, allowOut: [], denyOut: [], ...(network ? networkView(network) : {}) };
  }

  #emit(
    type: SandboxLifecycleEvent["type"],
    row: SandboxRow,
    extra: Pick<SandboxLifecycleEvent, "reason" | "pauseKind" | "network" | "from" | "to"> = {},
  ): void {
    this.#d.events.emit({
      type,
      sandboxId: row.sandboxId,
      templateId: row.templateId,
      metadata: row.metadata,
      timestamp: new Date(),
      ...(extra.reason ? { reason: extra.reason } : {}),
      ...(extra.pauseKind ? { pauseKind: extra.pauseKind } : {}),
      ...(extra.network ? { network: extra.network } : {}),
      ...(extra.from !== undefined ? { from: extra.from } : {}),
      ...(extra.to !== undefined ? { to: extra.to } : {}),
    });
  }
}
