// What each checkpoint costs on disk: the bytes only it holds (btrfs exclusive bytes of its files subvolume; du
// without btrfs). A checkpoint holds almost nothing when taken (its files are shared with the sandbox) and grows
// as the sandbox rewrites what it had: across a chain each one ends up holding what changed after it. So sizes
// are measured when asked for (one qgroup listing for all of them) and the last measurement is what the owner's
// snapshot quota counts.
import type { SandboxStorage } from "../storage/disk-storage.js";
import { checkpointFilesDir, type CheckpointRecordFile } from "./checkpoint-record.js";

export class CheckpointSizes {
  private readonly bytes = new Map<string, number>();

  constructor(
    private readonly root: string,
    private readonly storage: SandboxStorage,
  ) {}

  /** Measure these checkpoints now (those btrfs does not know keep their last size). */
  async refresh(records: readonly CheckpointRecordFile[], signal?: AbortSignal): Promise<void> {
    if (records.length === 0) return;
    const paths = new Map(records.map((r) => [checkpointFilesDir(this.root, r.checkpointId), r.checkpointId]));
    const measured = await this.storage.exclusiveBytes([...paths.keys()], signal);
    for (const [path, bytes] of measured) {
      const id = paths.get(path);
      if (id !== undefined) this.bytes.set(id, bytes);
    }
  }

  get(checkpointId: string): number {
    return this.bytes.get(checkpointId) ?? 0;
  }

  forget(checkpointId: string): void {
    this.bytes.delete(checkpointId);
  }
}
