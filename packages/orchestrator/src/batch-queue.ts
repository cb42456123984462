// Group commit for host work that costs about the same for one item as for many (one `nft -f` transaction, one
// `ip -batch`, one `btrfs subvolume delete` of several paths): items submitted in the same tick, or while a batch
// is under way, go together in the next batch. Killing hundreds of sandboxes at once then costs a few commands
// instead of hundreds queued one after another behind the kernel's locks.

export interface BatchQueueOptions<T> {
  /** Do the work for every item at once; a rejection means the batch as a whole failed. */
  runBatch: (items: readonly T[]) => Promise<void>;
  /**
   * Do the work for one item alone, after its batch failed: so one bad item fails only its own caller, and the
   * others succeed or fail each on their own. @default runBatch with that item alone
   */
  runOne?: (item: T) => Promise<void>;
  /** At most this many items per batch (a transaction should stay a reasonable size). @default 256 */
  maxBatch?: number;
}

interface Pending<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class BatchQueue<T> {
  readonly #opts: BatchQueueOptions<T>;
  #queue: Pending<T>[] = [];
  #running = false;

  constructor(opts: BatchQueueOptions<T>) {
    this.#opts = opts;
  }

  /** Settles when the batch holding `item` has done its work for it. */
  submit(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#running) {
        this.#running = true;
        // One tick's worth of submissions goes into the first batch too.
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#opts.maxBatch ?? 256);
      await this.#run(batch);
    }
    this.#running = false;
  }

  async #run(batch: Pending<T>[]): Promise<void> {
    try {
      await this.#opts.runBatch(batch.map((p) => p.item));
      for (const p of batch) p.resolve();
      return;
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.reject(error);
        return;
      }
    }
    const runOne = this.#opts.runOne ?? ((item: T) => this.#opts.runBatch([item]));
    for (const p of batch) {
      try {
        await runOne(p.item);
        p.resolve();
      } catch (error) {
        p.reject(error);
      }
    }
  }
}
