// Kills sandboxes at their endAt. One timer per sandbox: simple to re-arm when setTimeout/connect moves endAt.

/** Node timers overflow above 2^31-1 ms (~24.8 days); longer waits are chained. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class TimeoutScheduler {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #onExpire: (sandboxId: string) => void;
  #closed = false;

  constructor(onExpire: (sandboxId: string) => void) {
    this.#onExpire = onExpire;
  }

  /** (Re-)arm the timer of a sandbox; an endAt in the past fires on the next tick. */
  arm(sandboxId: string, endAt: Date): void {
    this.cancel(sandboxId);
    if (this.#closed) return;
    const delay = Math.max(0, endAt.getTime() - Date.now());
    const timer = setTimeout(() => {
      this.#timers.delete(sandboxId);
      if (delay > MAX_TIMER_MS) this.arm(sandboxId, endAt);
      else this.#onExpire(sandboxId);
    }, Math.min(delay, MAX_TIMER_MS));
    // A pending kill must not keep the process alive after close() of everything else.
    timer.unref();
    this.#timers.set(sandboxId, timer);
  }

  cancel(sandboxId: string): void {
    const timer = this.#timers.get(sandboxId);
    if (timer) clearTimeout(timer);
    this.#timers.delete(sandboxId);
  }

  get size(): number {
    return this.#timers.size;
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
