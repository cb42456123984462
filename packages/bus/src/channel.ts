import { abortError } from "./errors.js";

/**
 * A rendezvous channel: put() resolves only when a reader took the item, so producers (e.g. one pull loop per
 * durable consumer) never run ahead of the reader and nothing is buffered that a crash could strand.
 */
export class Channel<T> implements AsyncIterable<T> {
  private readonly puts: { item: T; taken: () => void }[] = [];
  private readonly takers: ((r: IteratorResult<T>) => void)[] = [];
  private closed = false;

  put(item: T, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.resolve();
    const taker = this.takers.shift();
    if (taker) {
      taker({ value: item, done: false });
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const entry = { item, taken: resolve };
      this.puts.push(entry);
      signal?.addEventListener("abort", () => {
        const i = this.puts.indexOf(entry);
        if (i >= 0) this.puts.splice(i, 1);
        reject(abortError(signal));
      }, { once: true });
    });
  }

  close(): void {
    this.closed = true;
    for (const t of this.takers.splice(0)) t({ value: undefined, done: true });
    for (const p of this.puts.splice(0)) p.taken();
  }

  next(): Promise<IteratorResult<T>> {
    const p = this.puts.shift();
    if (p) {
      p.taken();
      return Promise.resolve({ value: p.item, done: false });
    }
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((r) => this.takers.push(r));
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return { next: () => this.next(), return: () => (this.close(), Promise.resolve({ value: undefined, done: true })) };
  }
}
