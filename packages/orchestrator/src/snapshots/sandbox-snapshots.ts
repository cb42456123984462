// Snapshots of running sandboxes: the writable layer is copied into a new layer while the sandbox's processes are
// frozen (a paused sandbox stays as it is), and a template manifest stacks it on the layers the sandbox started
// from. A charged snapshot must fit its owner's quota (snapshot-charges.ts) before anything is frozen or copied.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";
import { diskUsageBytes } from "../disk-usage.js";
import { randomId } from "../ids.js";
import type { LaunchSource, LiveSandboxes } from "../live-sandboxes.js";
import type { Logger } from "../logger.js";
import type { MetricsSampler } from "../metrics-sampler.js";
import { copyEgressRules } from "../network/egress-rules.js";
import type { SnapshotInfo, SnapshotQuota, SnapshotSandboxOptions, SnapshotUsage } from "../orchestrator-api.js";
import type { HostedSandbox } from "../sandbox-host.js";
import type { SandboxOpQueue } from "../sandbox-op-queue.js";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { removeTree } from "../storage/remove-tree.js";
import type { TemplateStore } from "../templates/template-store.js";
import type { SnapshotCharges, SnapshotReservation } from "./snapshot-charges.js";
import {
  commitSnapshotLayer,
  copyUpper,
  discardCopy,
  isSnapshotManifest,
  snapshotInfo,
  snapshotViewPath,
  type SnapshotManifest,
} from "./snapshot-layer.js";
import { moveAlias, snapshotAlias } from "./snapshot-names.js";

export interface SandboxSnapshotsDeps {
  live: LiveSandboxes;
  ops: SandboxOpQueue;
  templates: TemplateStore;
  charges: SnapshotCharges;
  metrics: MetricsSampler;
  storage: SandboxStorage;
  logger: Logger;
}

const run = promisify(execFile);

export class SandboxSnapshots {
  constructor(private readonly deps: SandboxSnapshotsDeps) {}

  /** A snapshot of the sandbox, named and charged as `opts` say; undefined when the sandbox is unknown. */
  async snapshot(sandboxId: string, opts?: SnapshotSandboxOptions): Promise<SnapshotInfo | undefined> {
    const manifest = await this.take(sandboxId, opts?.name, undefined, opts?.quota, opts?.signal);
    return manifest && snapshotInfo(manifest);
  }

  /** Snapshots taken by take() and not deleted, fork bases left out, newest first. */
  list(): SnapshotInfo[] {
    return this.deps.templates
      .list()
      .filter((m): m is SnapshotManifest => isSnapshotManifest(m) && m.forkOf === undefined)
      .map(snapshotInfo)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || a.snapshotId.localeCompare(b.snapshotId));
  }

  usage(): SnapshotUsage[] {
    return this.deps.charges.usage(this.deps.templates.list());
  }

  /**
   * Snapshot a sandbox, in line with its pauses and resumes; `forkOf` marks the hidden snapshot a fork starts its
   * sandboxes from. Undefined when the sandbox is unknown.
   */
  async take(
    sandboxId: string,
    name: string | undefined,
    forkOf: string | undefined,
    quota: SnapshotQuota | undefined,
    signal?: AbortSignal,
  ): Promise<SnapshotManifest | undefined> {
    const alias = name !== undefined ? snapshotAlias(this.deps.templates, name) : undefined;
    let manifest: SnapshotManifest | undefined;
    const record = await this.deps.ops.run(sandboxId, async (sandbox) => {
      const source = this.sourceOf(sandbox);
      // A charged snapshot is refused before anything is frozen or copied when the writable layer as it is now
      // does not fit the owner's quota; the bytes stay reserved until the manifest that charges them is saved.
      const reservation = quota ? await this.reserve(sandbox, quota, forkOf !== undefined, signal) : undefined;
      try {
        manifest = await this.copy(sandbox, source, alias, forkOf, quota && reservation && { quota, reservation }, signal);
      } finally {
        if (reservation) this.deps.charges.release(reservation);
      }
    });
    return record && manifest;
  }

  private async reserve(sandbox: HostedSandbox, quota: SnapshotQuota, forFork: boolean, signal?: AbortSignal): Promise<SnapshotReservation> {
    const { charges, templates } = this.deps;
    if (!forFork) charges.checkCount(templates.list(), sandbox.record.sandboxId, quota);
    const bytes = await diskUsageBytes(`${sandbox.dir}/upper`, signal);
    return charges.reserve(templates.list(), quota, bytes);
  }

  /** The copy and its manifest (take()'s work once the snapshot is admitted). */
  private async copy(
    sandbox: HostedSandbox,
    source: LaunchSource,
    alias: string | undefined,
    forkOf: string | undefined,
    charge: { quota: SnapshotQuota; reservation: SnapshotReservation } | undefined,
    signal?: AbortSignal,
  ): Promise<SnapshotManifest> {
    const { templates, logger } = this.deps;
    const { sandboxId } = sandbox.record;
    const wasPaused = sandbox.record.state === "paused";
    let copy: string;
    if (wasPaused) {
      copy = await copyUpper(`${sandbox.dir}/upper`, templates.layersRoot, signal);
    } else if (this.deps.storage.kind === "btrfs") {
      copy = await this.copyRunning(sandbox, signal);
    } else {
      copy = await this.frozen(sandbox, signal, () => copyUpper(`${sandbox.dir}/upper`, templates.layersRoot, signal));
    }
    let sizeBytes: number | undefined;
    if (charge) {
      // What the copy really holds is what gets charged; beyond the quota it goes again.
      try {
        sizeBytes = await diskUsageBytes(copy, signal);
        this.deps.charges.settle(templates.list(), charge.quota, charge.reservation, sizeBytes);
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
      egress: { allowInternetAccess: sandbox.record.allowInternetAccess, ...copyEgressRules(sandbox.record.egress ?? { allowOut: [], denyOut: [] }) },
      ...(forkOf !== undefined ? { forkOf } : {}),
      ...(charge ? { owner: charge.quota.owner, sizeBytes } : {}),
    };
    try {
      // The manifest first: garbage collection keeps the layer it names from the moment it appears.
      await templates.save(next);
      await commitSnapshotLayer(templates.layersRoot, layerId, copy);
    } catch (error) {
      await templates.remove(next.templateId).catch(() => undefined);
      await discardCopy(copy).catch(() => undefined);
      throw error;
    }
    if (alias !== undefined) await moveAlias(templates, alias, next.templateId);
    logger.info(
      { sandboxId, snapshotId: next.templateId, layerId, owner: next.owner, sizeBytes },
      forkOf !== undefined ? "sandbox snapshotted for a fork" : "sandbox snapshotted",
    );
    return next;
  }

  /**
   * The copy of a running sandbox's writable layer on btrfs. Its processes stay frozen only for a subvolume snapshot
   * of its directory (milliseconds, whatever it holds), and the copy is made from that snapshot while they run
   * again. What it wrote before is flushed first, while it runs: a snapshot writes back the subvolume's dirty data,
   * and a sandbox that just wrote 100 MB would otherwise stay frozen for that writeback.
   */
  private async copyRunning(sandbox: HostedSandbox, signal?: AbortSignal): Promise<string> {
    const { templates, storage } = this.deps;
    await run("sync", ["--file-system", sandbox.dir], { signal });
    const view = await snapshotViewPath(templates.layersRoot);
    await this.frozen(sandbox, signal, () => storage.snapshotDir(sandbox.dir, view, { readOnly: true, signal }));
    try {
      return await copyUpper(join(view, "upper"), templates.layersRoot, signal);
    } finally {
      await removeTree(view).catch((error: unknown) =>
        this.deps.logger.error({ sandboxId: sandbox.record.sandboxId, err: error }, "could not remove a snapshot's frozen view; the next start removes it"),
      );
    }
  }

  /** Run `work` with the sandbox's processes frozen, so that no write lands half in what it copies. */
  private async frozen<T>(sandbox: HostedSandbox, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    const { sandboxId } = sandbox.record;
    const started = performance.now();
    try {
      await sandbox.cgroup.freeze(signal);
      return await work();
    } catch (error) {
      throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be snapshotted: ${(error as Error).message}`, {
        reason: "snapshot_failed",
        cause: error,
      });
    } finally {
      await sandbox.cgroup.thaw().catch((error: unknown) => this.deps.logger.error({ sandboxId, err: error }, "thaw after snapshot failed"));
      this.deps.metrics.restartCpu(sandbox);
      this.deps.logger.debug({ sandboxId, frozenMs: Math.round(performance.now() - started) }, "sandbox frozen for a snapshot");
    }
  }

  /** Layers, runtime and env vars of a sandbox; for one adopted after a restart, its template's current ones. */
  private sourceOf(sandbox: HostedSandbox): LaunchSource {
    const known = this.deps.live.source(sandbox.record.sandboxId);
    if (known) return known;
    const template = this.deps.templates.get(sandbox.record.templateId);
    if (!template) {
      throw new BurrowError(
        Code.FailedPrecondition,
        `the template sandbox ${sandbox.record.sandboxId} started from no longer exists, so its files cannot be snapshotted`,
        { reason: "source_template_gone" },
      );
    }
    return { layers: [...template.layers], runtime: template.runtime, envVars: {} };
  }
}
