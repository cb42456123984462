// One sandbox's filesystem changes on their way to the bus: merged per (type, path) within a window, then cut to a
// token bucket. What the bucket cannot take is dropped, newest kept: in a flood a consumer wants the state things
// ended in, and one `overflow` summary per window tells it how many changes it did not see.
import type { FilesystemEventType } from "@burrow/bus";
import type { FsEventLimits } from "./fs-event-limits.js";

export type FsChangeType = Exclude<FilesystemEventType, "overflow">;

/** Changes of one type to one path, merged. */
export interface FsChange {
  type: FsChangeType;
  path: string;
  /** Raw changes merged into this one. */
  count: number;
  /** Unix ms of the last of them. */
  atMs: number;
}

/** Changes dropped since the last batch. */
export interface FsOverflow {
  dropped: number;
  droppedByType: Partial<Record<FsChangeType, number>>;
  /** The most recently changed of the dropped paths. */
  path: string;
  sinceMs: number;
  atMs: number;
}

/** What one window publishes: the summary of what was dropped first, then the changes kept, oldest first. */
export interface FsBatch {
  overflow: FsOverflow | undefined;
  changes: FsChange[];
}

export class FsEventThrottle {
  readonly #limits: FsEventLimits;
  readonly #publish: (batch: FsBatch) => Promise<void>;
  readonly #now: () => number;
  /** Insertion order is last-change order: a change to a known key moves it to the end. */
  readonly #pending = new Map<string, FsChange>();
  #tokens: number;
  #refilledAt: number;
  #overflow: FsOverflow | undefined;
  #timer: NodeJS.Timeout | undefined;
  #publishing = false;
  #closed = false;

  constructor(limits: FsEventLimits, publish: (batch: FsBatch) => Promise<void>, now: () => number = Date.now) {
    this.#limits = limits;
    this.#publish = publish;
    this.#now = now;
    this.#tokens = limits.burst;
    this.#refilledAt = now();
  }

  /** Records one change; cheap and synchronous, so the reader of envd's stream never waits on the bus. */
  push(type: FsChangeType, path: string): void {
    if (this.#closed) return;
    const key = `${type}\0${path}`;
    const atMs = this.#now();
    const known = this.#pending.get(key);
    if (known) {
      this.#pending.delete(key);
      known.count++;
      known.atMs = atMs;
      this.#pending.set(key, known);
    } else {
      if (this.#pending.size >= this.#limits.maxPending) {
        const [oldestKey, oldest] = this.#pending.entries().next().value as [string, FsChange];
        this.#pending.delete(oldestKey);
        this.#drop(oldest);
      }
      this.#pending.set(key, { type, path, count: 1, atMs });
    }
    this.#schedule();
  }

  /** Publishes what is pending now (within the bucket, the rest as overflow) and takes no more changes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#publishing && (this.#pending.size > 0 || this.#overflow)) await this.#flush();
  }

  #schedule(): void {
    // While a batch is being published the next window waits for it, so batches never interleave on the bus.
    if (this.#timer || this.#publishing || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#flush();
    }, this.#limits.windowMs);
    this.#timer.unref();
  }

  async #flush(): Promise<void> {
    const now = this.#now();
    this.#tokens = Math.min(this.#limits.burst, this.#tokens + ((now - this.#refilledAt) * this.#limits.perSecond) / 1000);
    this.#refilledAt = now;
    const all = [...this.#pending.values()];
    this.#pending.clear();
    const kept = Math.min(all.length, Math.floor(this.#tokens));
    this.#tokens -= kept;
    for (const c of all.slice(0, all.length - kept)) this.#drop(c);
    const batch: FsBatch = { overflow: this.#overflow, changes: all.slice(all.length - kept) };
    this.#overflow = undefined;
    if (!batch.overflow && batch.changes.length === 0) return;
    this.#publishing = true;
    try {
      await this.#publish(batch);
    } finally {
      this.#publishing = false;
      if (this.#pending.size > 0 || this.#overflow) {
        if (this.#closed) await this.#flush();
        else this.#schedule();
      }
    }
  }

  #drop(c: FsChange): void {
    const o = (this.#overflow ??= { dropped: 0, droppedByType: {}, path: c.path, sinceMs: c.atMs, atMs: c.atMs });
    o.dropped += c.count;
    o.droppedByType[c.type] = (o.droppedByType[c.type] ?? 0) + c.count;
    // sinceMs is approximate for merged changes: a merged change only remembers its last time.
    o.sinceMs = Math.min(o.sinceMs, c.atMs);
    if (c.atMs >= o.atMs) {
      o.atMs = c.atMs;
      o.path = c.path;
    }
  }
}
