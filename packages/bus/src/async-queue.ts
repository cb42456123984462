/**
 * A bounded push→pull buffer exposed as an AsyncIterable. When full, new items are dropped and counted
 * (the NATS slow-consumer policy), so a stalled reader can never grow memory without bound.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private head = 0;
  private waiter: ((r: IteratorResult<T>) => void) | undefined;
  private done = false;
  private failure: unknown;
  dropped = 0;

  constructor(private readonly limit: number, private readonly onReturn?: () => void) {}

  get size(): number {
    return this.items.length - this.head;
  }

  get isDone(): boolean {
    return this.done;
  }

  push(item: T): boolean {
    if (this.done) return false;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w({ value: item, done: false });
      return true;
    }
    if (this.size >= this.limit) {
      this.dropped++;
      return false;
    }
    this.items.push(item);
    return true;
  }

  /** Ends the stream; buffered items are still handed out before `done`, unless `error` is given. */
  end(error?: unknown): void {
    if (this.done) return;
    this.done = true;
    this.failure = error;
    if (error !== undefined) this.items = [];
    const w = this.waiter;
    this.waiter = undefined;
    if (w) w({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<T>> {
    if (this.head < this.items.length) {
      const value = this.items[this.head]!;
      this.items[this.head++] = undefined as T;
      // Compact now and then so the array does not grow forever under a steady stream.
      if (this.head > 1024 && this.head * 2 > this.items.length) {
        this.items = this.items.slice(this.head);
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.done) {
      if (this.failure !== undefined) {
        const f = this.failure;
        this.failure = undefined;
        return Promise.reject(f);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.end();
        this.onReturn?.();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
