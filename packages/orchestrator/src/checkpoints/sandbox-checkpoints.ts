// Checkpoint trees: taking a checkpoint of a sandbox's files, listing the tree around a sandbox, reading one
// checkpoint, deleting one (or a subtree). Rollback and branching build on the same store (rollback-sandbox.ts,
// branch-checkpoint.ts).
//
// A checkpoint is a read-only snapshot of the sandbox's whole directory (a btrfs subvolume: its overlay upper and
// work dir), taken while the sandbox's processes are frozen. Each checkpoint is a snapshot of its own, never a
// layer on top of its parent, so a chain of any depth costs the same to take, to roll back to and to branch from.
//
// Checkpoints stay when their sandbox is killed, until deleted: an agent can keep branching from them. Their bytes
// are charged with the owner's snapshots (snapshot-charges.ts).
import { mkdir } from "node:fs/promises";
import { BurrowError, Code } from "@burrow/protocol";
import { randomId } from "../ids.js";
import type { LiveSandboxes } from "../live-sandboxes.js";
import type { Logger } from "../logger.js";
import type { MetricsSampler } from "../metrics-sampler.js";
import type { CheckpointInfo, CheckpointSandboxOptions, CheckpointTree, DeleteCheckpointOptions } from "../orchestrator-api.js";
import type { HostedSandbox } from "../sandbox-host.js";
import type { SandboxOpQueue } from "../sandbox-op-queue.js";
import type { SnapshotCharges } from "../snapshots/snapshot-charges.js";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { removeTree } from "../storage/remove-tree.js";
import type { TemplateStore } from "../templates/template-store.js";
import {
  CHECKPOINT_FORMAT,
  CHECKPOINT_FILES_DIR,
  checkpointDir,
  checkpointFilesDir,
  checkpointInfo,
  type CheckpointRecordFile,
} from "./checkpoint-record.js";
import type { CheckpointSizes } from "./checkpoint-sizes.js";
import type { CheckpointStore } from "./checkpoint-store.js";

/** Longest label kept with a checkpoint. */
export const MAX_CHECKPOINT_LABEL = 256;

export interface SandboxCheckpointsDeps {
  store: CheckpointStore;
  sizes: CheckpointSizes;
  live: LiveSandboxes;
  ops: SandboxOpQueue;
  storage: SandboxStorage;
  templates: TemplateStore;
  charges: SnapshotCharges;
  metrics: MetricsSampler;
  /** Called after checkpoints were deleted: layers of deleted templates they kept may go now. */
  onDeleted: () => void;
  logger: Logger;
}

export class SandboxCheckpoints {
  constructor(private readonly deps: SandboxCheckpointsDeps) {}

  /** Checkpoint a sandbox's files, in line with its other operations; undefined when the sandbox is unknown. */
  async checkpoint(sandboxId: string, opts: CheckpointSandboxOptions = {}): Promise<CheckpointInfo | undefined> {
    const { store, ops } = this.deps;
    const label = checkLabel(opts.label);
    let taken: CheckpointRecordFile | undefined;
    const record = await ops.run(sandboxId, async (sandbox) => {
      taken = await store.exclusive(() => this.take(sandbox, label, opts));
    });
    return record && taken && checkpointInfo(taken, this.deps.sizes.get(taken.checkpointId));
  }

  private async take(sandbox: HostedSandbox, label: string | undefined, opts: CheckpointSandboxOptions): Promise<CheckpointRecordFile> {
    const { store, charges, templates, logger } = this.deps;
    const { sandboxId } = sandbox.record;
    const { signal, quota } = opts;
    const source = this.sourceOf(sandbox);
    if (quota) {
      // A new checkpoint holds nothing of its own yet (its files are the sandbox's); it grows as the sandbox moves
      // on. So one is refused when the owner's snapshots and checkpoints, as last measured (at most seconds ago),
      // have reached the quota.
      await this.deps.sizes.refreshIfStale(store.all(), signal);
      charges.release(charges.reserve(templates.list(), quota, 0));
    }
    const checkpointId = randomId();
    const dir = checkpointDir(store.root, checkpointId);
    await mkdir(dir);
    try {
      await this.snapshotFiles(sandbox, checkpointFilesDir(store.root, checkpointId), signal);
      const record: CheckpointRecordFile = {
        format: CHECKPOINT_FORMAT,
        checkpointId,
        sandboxId,
        parentId: store.head(sandboxId) ?? null,
        ...(label !== undefined ? { label } : {}),
        createdAt: new Date().toISOString(),
        templateId: sandbox.record.templateId,
        layers: source.layers,
        ...(source.runtime ? { runtime: source.runtime } : {}),
        limits: { ...sandbox.record.limits },
        allowInternetAccess: sandbox.record.allowInternetAccess,
        ...(sandbox.record.egress ? { egress: sandbox.record.egress } : {}),
        ...(quota ? { owner: quota.owner } : {}),
        files: CHECKPOINT_FILES_DIR,
        memory: null,
      };
      await store.add(record);
      await store.setHead(sandboxId, checkpointId);
      logger.info({ sandboxId, checkpointId, parentId: record.parentId }, "sandbox checkpointed");
      return record;
    } catch (error) {
      await removeTree(checkpointFilesDir(store.root, checkpointId)).catch(() => undefined);
      await removeTree(dir).catch(() => undefined);
      throw error;
    }
  }

  /** The snapshot itself, with the sandbox's processes frozen so that no write lands half in it. */
  private async snapshotFiles(sandbox: HostedSandbox, to: string, signal?: AbortSignal): Promise<void> {
    const { storage, logger } = this.deps;
    const { sandboxId } = sandbox.record;
    // A paused sandbox (frozen, or halted with only its files) cannot write: nothing to freeze.
    if (sandbox.record.state === "paused") {
      await storage.snapshotDir(sandbox.dir, to, { readOnly: true, signal });
      return;
    }
    try {
      await sandbox.cgroup.freeze(signal);
      await storage.snapshotDir(sandbox.dir, to, { readOnly: true, signal });
    } catch (error) {
      throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be checkpointed: ${(error as Error).message}`, {
        reason: "checkpoint_failed",
        cause: error,
      });
    } finally {
      await sandbox.cgroup.thaw().catch((error: unknown) => logger.error({ sandboxId, err: error }, "thaw after checkpoint failed"));
      this.deps.metrics.restartCpu(sandbox);
    }
  }

  /** The tree(s) around a sandbox; undefined when neither it nor any checkpoint of its lineage is known. */
  async list(sandboxId: string, signal?: AbortSignal): Promise<CheckpointTree | undefined> {
    const { store, live, sizes } = this.deps;
    const roots = store.rootsOfSandbox(sandboxId);
    if (roots.length === 0 && !live.has(sandboxId)) return undefined;
    const records = roots
      .map((root) => store.tree(root))
      .sort((a, b) => (a[0]?.createdAt ?? "").localeCompare(b[0]?.createdAt ?? ""))
      .flat();
    await sizes.refresh(records, signal);
    return {
      sandboxId,
      currentId: store.head(sandboxId) ?? null,
      checkpoints: records.map((r) => checkpointInfo(r, sizes.get(r.checkpointId))),
    };
  }

  async get(checkpointId: string, signal?: AbortSignal): Promise<CheckpointInfo | undefined> {
    const record = this.deps.store.get(checkpointId);
    if (!record) return undefined;
    await this.deps.sizes.refresh([record], signal);
    return checkpointInfo(record, this.deps.sizes.get(checkpointId));
  }

  /**
   * Delete a checkpoint; with `cascade`, every checkpoint descending from it too (leaves first, so a crash midway
   * leaves a whole tree). Sandboxes that descended from a deleted checkpoint descend from its nearest kept ancestor.
   * Children already started from it keep running: their files are snapshots of their own.
   */
  async delete(checkpointId: string, opts: DeleteCheckpointOptions = {}): Promise<string[] | undefined> {
    const { store, sizes, logger } = this.deps;
    const deleted = await store.exclusive(async () => {
      if (!store.get(checkpointId)) return undefined;
      const dependants = store.subtreeLeavesFirst(checkpointId).length - 1;
      if (dependants > 0 && !opts.cascade) {
        throw new BurrowError(
          Code.FailedPrecondition,
          `checkpoint ${checkpointId} has ${dependants} dependant checkpoint${dependants === 1 ? "" : "s"} descending from it; ` +
            "delete them first or delete with cascade",
          { reason: "checkpoint_has_dependants", details: { dependants } },
        );
      }
      const ids = store.subtreeLeavesFirst(checkpointId);
      for (const id of ids) {
        if (opts.signal?.aborted) throw new BurrowError(Code.Canceled, "checkpoint deletion was canceled", { reason: "delete_canceled" });
        await store.remove(id);
        sizes.forget(id);
      }
      return ids;
    });
    if (deleted) {
      logger.info({ checkpointId, deleted: deleted.length }, "checkpoints deleted");
      this.deps.onDeleted();
    }
    return deleted;
  }

  /** Bytes charged per owner (the last measurement of each checkpoint), for the snapshot quota. */
  charges(): { owner: string; bytes: number }[] {
    return this.deps.store
      .all()
      .filter((r): r is CheckpointRecordFile & { owner: string } => r.owner !== undefined)
      .map((r) => ({ owner: r.owner, bytes: this.deps.sizes.get(r.checkpointId) }));
  }

  /** Layers and runtime the sandbox runs on (children and rollbacks need the same). */
  private sourceOf(sandbox: HostedSandbox): { layers: string[]; runtime?: CheckpointRecordFile["runtime"] } {
    const known = this.deps.live.source(sandbox.record.sandboxId);
    if (known) return { layers: [...known.layers], ...(known.runtime ? { runtime: known.runtime } : {}) };
    const boot = sandbox.record.boot;
    if (boot) return { layers: [...boot.layers], ...(boot.runtime ? { runtime: boot.runtime } : {}) };
    const template = this.deps.templates.get(sandbox.record.templateId);
    if (!template) {
      throw new BurrowError(
        Code.FailedPrecondition,
        `the template sandbox ${sandbox.record.sandboxId} started from no longer exists, so its files cannot be checkpointed`,
        { reason: "source_template_gone" },
      );
    }
    return { layers: [...template.layers], ...(template.runtime ? { runtime: template.runtime } : {}) };
  }
}

function checkLabel(label: unknown): string | undefined {
  if (label === undefined) return undefined;
  if (typeof label !== "string" || label.length > MAX_CHECKPOINT_LABEL || /[\u0000-\u001f\u007f]/.test(label)) {
    throw new BurrowError(Code.InvalidArgument, `label must be a string of at most ${MAX_CHECKPOINT_LABEL} characters without control characters`, {
      reason: "invalid_checkpoint_label",
    });
  }
  return label;
}
