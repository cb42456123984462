export type QueueResult<T> = { kind: "item"; value: T } | { kind: "idle" } | { kind: "done" };

/**
 * A single-consumer queue feeding one server stream. `next()` also reports idleness (for keepalives) and gives
 * up when the stream's signal aborts, so a disconnected client never leaves a generator parked forever.
 * Size accounting lets producers apply backpressure; `onDrain` fires whenever the consumer takes an item.
 */
export class EventQueue<T> {
  #items: T[] = [];
  #bytes = 0;
  #closed = false;
  #wake: (() => void) | undefined;

  constructor(
    private readonly sizeOf: (item: T) => number = () => 0,
    private readonly onDrain?: () => void,
  ) {}

  get bytes(): number {
    return this.#bytes;
  }
  get closed(): boolean {
    return this.#closed;
  }

  push(item: T): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#bytes += this.sizeOf(item);
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  /** Closes the queue and drops what it holds: its consumer is gone, and a generator parked on it keeps it alive. */
  discard(): void {
    this.#items = [];
    this.#bytes = 0;
    this.close();
  }

  async next(signal: AbortSignal, idleMs: number): Promise<QueueResult<T>> {
    const ready = this.#take();
    if (ready) return ready;
    signal.throwIfAborted();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        this.#wake = resolve;
        timer = setTimeout(resolve, idleMs);
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    } finally {
      this.#wake = undefined;
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener("abort", onAbort);
    }
    // An abort that also closed the queue (its stream unsubscribed on the same signal) ends the stream as an abort,
    // with its reason (a deadline says deadline_exceeded), not as a clean end.
    signal.throwIfAborted();
    return this.#take() ?? { kind: "idle" };
  }

  #take(): QueueResult<T> | undefined {
    if (this.#items.length > 0) {
      const value = this.#items.shift() as T;
      this.#bytes -= this.sizeOf(value);
      this.onDrain?.();
      return { kind: "item", value };
    }
    return this.#closed ? { kind: "done" } : undefined;
  }
}

/** Drains a queue into a stream, inserting a keepalive message whenever nothing flowed for `idleMs`. */
export async function* drainWithKeepalive<T, M>(
  queue: EventQueue<T>,
  signal: AbortSignal,
  idleMs: number,
  toMessage: (item: T) => M,
  keepalive: () => M,
): AsyncGenerator<M> {
  for (;;) {
    const r = await queue.next(signal, idleMs);
    if (r.kind === "done") return;
    yield r.kind === "item" ? toMessage(r.value) : keepalive();
  }
}
