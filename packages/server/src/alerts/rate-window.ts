// At most one alert per key and window: the first occurrence after a quiet window is reported at once (the leading
// edge), the ones that follow inside the window are counted and reported together when it ends (the trailing
// summary), which opens the next window. A flood thus makes one alert per window, and a lone event is not delayed.

export type RateWindowEmit = (key: string, count: number) => void;

export class RateWindow {
  readonly #windowMs: number;
  readonly #emit: RateWindowEmit;
  /** Keys inside a window, with what happened since its start was reported. */
  readonly #open = new Map<string, { pending: number; timer: NodeJS.Timeout }>();

  constructor(windowMs: number, emit: RateWindowEmit) {
    this.#windowMs = windowMs;
    this.#emit = emit;
  }

  /** `count` occurrences for `key` now. */
  hit(key: string, count = 1): void {
    const open = this.#open.get(key);
    if (open) {
      open.pending += count;
      return;
    }
    this.#start(key);
    this.#emit(key, count);
  }

  close(): void {
    for (const { timer } of this.#open.values()) clearTimeout(timer);
    this.#open.clear();
  }

  #start(key: string): void {
    const timer = setTimeout(() => {
      const pending = this.#open.get(key)?.pending ?? 0;
      this.#open.delete(key);
      if (pending === 0) return;
      this.#start(key);
      this.#emit(key, pending);
    }, this.#windowMs);
    timer.unref();
    this.#open.set(key, { pending: 0, timer });
  }
}
