// Rollback: a running sandbox is restored in place to a checkpoint of its tree. Its processes end (a halt, as for
// a filesystem pause), its directory is replaced by a writable snapshot of the checkpoint's files, and it boots
// again: same id, address, envd token and env vars, a new boot id, the template's start command run again.
// The copy costs what changes afterwards, whatever the depth of the checkpoint.
import { copyFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import type { ColdBoot } from "../cold-boot.js";
import { randomId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { SandboxRecord } from "../orchestrator-api.js";
import type { HostedSandbox } from "../sandbox-host.js";
import type { SandboxOpQueue } from "../sandbox-op-queue.js";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { removeTree } from "../storage/remove-tree.js";
import type { CheckpointRecordFile } from "./checkpoint-record.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import { writableCopy } from "./writable-copy.js";

export interface RollbackDeps {
  store: CheckpointStore;
  ops: SandboxOpQueue;
  storage: SandboxStorage;
  coldBoot: ColdBoot;
  logger: Logger;
}

/** Undefined when the sandbox is unknown; NotFound when the checkpoint is; FailedPrecondition outside its tree. */
export async function rollbackSandbox(deps: RollbackDeps, sandboxId: string, checkpointId: string, signal?: AbortSignal): Promise<SandboxRecord | undefined> {
  const { store, ops, logger } = deps;
  const checkpoint = store.get(checkpointId);
  if (!checkpoint) throw new BurrowError(Code.NotFound, `checkpoint ${checkpointId} not found`, { reason: "checkpoint_not_found" });
  return ops.run(sandboxId, async (sandbox) => {
    checkRollback(store, sandbox, checkpoint);
    const started = performance.now();
    await deps.coldBoot.halt(sandbox, signal);
    let replaced: string;
    try {
      replaced = await swapFiles(deps, sandbox, checkpointId, signal);
    } catch (error) {
      // The sandbox's own files are still in place: it comes back as it was, and the rollback fails.
      await deps.coldBoot.boot(sandbox).catch((bootError: unknown) => logger.error({ sandboxId, err: bootError }, "could not boot a sandbox after a failed rollback"));
      throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be rolled back: ${(error as Error).message}`, {
        reason: "rollback_failed",
        cause: error,
      });
    }
    await store.exclusive(async () => {
      if (store.get(checkpointId)) await store.setHead(sandboxId, checkpointId);
    });
    // From here on the sandbox has the checkpoint's files; a failed boot leaves it filesystem-paused on them.
    await deps.coldBoot.boot(sandbox, signal);
    logger.info({ sandboxId, checkpointId, ms: Math.round(performance.now() - started) }, "sandbox rolled back");
    // The files it had go once it runs again: nobody waits for their removal (a start removes what is left).
    void removeTree(replaced).catch((error: unknown) =>
      logger.error({ sandboxId, err: error }, "could not remove a rolled-back sandbox's old files; the next start removes them"),
    );
  });
}

function checkRollback(store: CheckpointStore, sandbox: HostedSandbox, checkpoint: CheckpointRecordFile): void {
  const { sandboxId } = sandbox.record;
  if (sandbox.record.state === "paused") {
    throw new BurrowError(Code.FailedPrecondition, `sandbox ${sandboxId} is paused; resume it before rolling it back`, { reason: "sandbox_paused" });
  }
  const roots = store.rootsOfSandbox(sandboxId);
  if (!roots.includes(store.rootOf(checkpoint.checkpointId))) {
    throw new BurrowError(
      Code.FailedPrecondition,
      `checkpoint ${checkpoint.checkpointId} is not in the checkpoint tree of sandbox ${sandboxId}; branch from it instead`,
      { reason: "checkpoint_not_in_lineage" },
    );
  }
  const layers = sandbox.record.boot?.layers;
  if (layers && layers.join("/") !== checkpoint.layers.join("/")) {
    throw new BurrowError(Code.FailedPrecondition, `checkpoint ${checkpoint.checkpointId} was taken on other template layers than sandbox ${sandboxId} runs on`, {
      reason: "checkpoint_not_in_lineage",
    });
  }
}

/**
 * Replace the halted sandbox's directory by a writable copy of the checkpoint's files, keeping its record; resolves
 * where the old directory went (in the checkpoints' temporary directory, for the caller to remove). Both renames stay on one filesystem (the copy is assembled in the checkpoints' temporary
 * directory), so the sandbox is without a directory only between two renames.
 */
async function swapFiles(deps: RollbackDeps, sandbox: HostedSandbox, checkpointId: string, signal?: AbortSignal): Promise<string> {
  const { store, storage, logger } = deps;
  const copy = await writableCopy(storage, store, checkpointId, signal);
  const old = join(store.tmpDir, `replaced-${randomId()}`);
  try {
    await copyFile(join(sandbox.dir, "sandbox.json"), join(copy, "sandbox.json"));
    await rename(sandbox.dir, old);
  } catch (error) {
    await removeTree(copy).catch(() => undefined);
    throw error;
  }
  try {
    await rename(copy, sandbox.dir);
  } catch (error) {
    await rename(old, sandbox.dir).catch((undo: unknown) => logger.error({ sandboxId: sandbox.record.sandboxId, err: undo }, "could not put a sandbox's directory back"));
    await removeTree(copy).catch(() => undefined);
    throw error;
  }
  await storage.applyQuota(sandbox.dir, sandbox.record.limits.diskMB);
  return old;
}
