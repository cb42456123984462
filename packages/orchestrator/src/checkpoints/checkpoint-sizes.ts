// What each checkpoint costs on disk: the bytes only it holds (btrfs exclusive bytes of its files subvolume; du
// without btrfs). A checkpoint holds almost nothing when taken (its files are shared with the sandbox) and grows
// as the sandbox rewrites what it had: across a chain each one ends up holding what changed after it. So sizes
// are measured when asked for (one qgroup listing for all of them) and the last measurement is what the owner's
// snapshot quota counts.
import type { Logger } from "../logger.js";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { checkpointFilesDir, type CheckpointRecordFile } from "./checkpoint-record.js";

/** How old the last measurement may be when a checkpoint is checked against its owner's quota. */
const QUOTA_CHECK_MAX_AGE_MS = 10_000;

export class CheckpointSizes {
  private readonly bytes = new Map<string, number>();
  private measuredAt = 0;

  constructor(
    private readonly root: string,
    private readonly storage: SandboxStorage,
    private readonly logger: Logger,
  ) {}

  /** Measure these checkpoints now (those btrfs does not know keep their last size). */
  async refresh(records: readonly CheckpointRecordFile[], signal?: AbortSignal): Promise<void> {
    if (records.length === 0) return;
    const paths = new Map(records.map((r) => [checkpointFilesDir(this.root, r.checkpointId), r.checkpointId]));
    let measured: Map<string, number>;
    try {
      measured = await this.storage.exclusiveBytes([...paths.keys()], signal);
    } catch (error) {
      // Sizes inform and charge; a failed measurement keeps the last one rather than failing the caller.
      if (signal?.aborted) throw error;
      this.logger.warn({ err: error }, "could not measure checkpoint sizes; keeping the last measurement");
      return;
    }
    for (const [path, bytes] of measured) {
      const id = paths.get(path);
      if (id !== undefined) this.bytes.set(id, bytes);
    }
  }

  /**
   * Measure again only when the last measurement is older than a few seconds: a quota check before each of a burst
   * of checkpoints would otherwise pay for a filesystem sync and a qgroup listing every time (about half of a
   * checkpoint's time), for bytes that barely moved.
   */
  async refreshIfStale(records: readonly CheckpointRecordFile[], signal?: AbortSignal): Promise<void> {
    if (Date.now() - this.measuredAt < QUOTA_CHECK_MAX_AGE_MS) return;
    const started = Date.now();
    await this.refresh(records, signal);
    this.measuredAt = started;
  }

  get(checkpointId: string): number {
    return this.bytes.get(checkpointId) ?? 0;
  }

  forget(checkpointId: string): void {
    this.bytes.delete(checkpointId);
  }
}
