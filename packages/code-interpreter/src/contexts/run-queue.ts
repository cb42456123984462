// Runs of one context go one at a time, in arrival order: a second run waits its turn instead of being refused.

export class RunQueue {
  #tail: Promise<void> = Promise.resolve();
  #waiting = 0;

  /** Resolves with a release function when it is this caller's turn. */
  async acquire(): Promise<() => void> {
    const previous = this.#tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#tail = previous.then(() => mine);
    this.#waiting++;
    await previous;
    this.#waiting--;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
    };
  }

  /** Runs queued behind the current one. */
  get waiting(): number {
    return this.#waiting;
  }
}
