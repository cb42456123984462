// A single-consumer queue that is an AsyncIterable: producers push from event handlers, the consumer iterates,
// and the iteration ends (end) or throws (fail) once the queued items are drained.

export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #head = 0;
  #done = false;
  #error: unknown = undefined;
  #failed = false;
  #wake: (() => void) | undefined;

  get closed(): boolean {
    return this.#done || this.#failed;
  }

  push(item: T): void {
    if (this.closed) return;
    this.#items.push(item);
    this.#notify();
  }

  end(): void {
    if (this.closed) return;
    this.#done = true;
    this.#notify();
  }

  fail(error: unknown): void {
    if (this.closed) return;
    this.#failed = true;
    this.#error = error;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.#head < this.#items.length) {
        const item = this.#items[this.#head] as T;
        this.#items[this.#head] = undefined as T;
        this.#head++;
        if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
          this.#items = this.#items.slice(this.#head);
          this.#head = 0;
        }
        yield item;
        continue;
      }
      if (this.#failed) throw this.#error;
      if (this.#done) return;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }
}
