// A writable copy of a checkpoint's files, for a sandbox to run on (a branch's child, or a sandbox rolled back):
// a writable snapshot of the checkpoint's read-only one (it costs what the sandbox changes afterwards), without
// what belonged to the run it was taken from rather than to its files.
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { randomId } from "../ids.js";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { removeTree } from "../storage/remove-tree.js";
import { checkpointFilesDir } from "./checkpoint-record.js";
import type { CheckpointStore } from "./checkpoint-store.js";

/** Files of a sandbox's directory that belong to its run: overlayfs's work dir (it must start empty), envd's log, the record. */
const RUN_FILES = ["envd.log", "sandbox.json", "sandbox.json.tmp"];

/**
 * Copy the checkpoint's files into the store's temporary directory and return the copy's path; the caller moves it
 * into place (same filesystem: a rename) or removes it. Runs under the store's lock, so the checkpoint cannot be
 * deleted meanwhile.
 */
export async function writableCopy(storage: SandboxStorage, store: CheckpointStore, checkpointId: string, signal?: AbortSignal): Promise<string> {
  return store.exclusive(async () => {
    const to = join(store.tmpDir, randomId());
    await storage.snapshotDir(checkpointFilesDir(store.root, checkpointId), to, { readOnly: false, signal });
    try {
      await removeTree(join(to, "work"));
      await mkdir(join(to, "work"));
      await Promise.all(RUN_FILES.map((name) => rm(join(to, name), { force: true })));
    } catch (error) {
      await removeTree(to).catch(() => undefined);
      throw error;
    }
    return to;
  });
}
