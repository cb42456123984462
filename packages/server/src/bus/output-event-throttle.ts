import { resolvePositiveLimits } from "../positive-limits.js";
// Process output on its way to the bus (`proc.output`, asked for per run): chunks of one stream are merged per window
// and cut to a byte budget, so a command printing as fast as it can costs a few events a second instead of one
// stored message per chunk. What the budget cannot take is dropped, newest kept, and the event says how much.

export interface OutputEventLimits {
  /** Chunks of one stream within this window are published as one event. @default 100 (env BURROW_OUTPUT_EVENT_WINDOW_MS) */
  windowMs: number;
  /** Output bytes one process may publish per second, sustained. @default 65536 (env BURROW_OUTPUT_EVENT_BYTES_PER_SEC) */
  bytesPerSecond: number;
  /** Output bytes one process may publish at once after a quiet spell. @default 262144 (env BURROW_OUTPUT_EVENT_BURST_BYTES) */
  burstBytes: number;
}

const DEFAULTS: OutputEventLimits = { windowMs: 100, bytesPerSecond: 64 * 1024, burstBytes: 256 * 1024 };
const ENV: Record<keyof OutputEventLimits, string> = {
  windowMs: "BURROW_OUTPUT_EVENT_WINDOW_MS",
  bytesPerSecond: "BURROW_OUTPUT_EVENT_BYTES_PER_SEC",
  burstBytes: "BURROW_OUTPUT_EVENT_BURST_BYTES",
};

/** Given values, then the environment, then the defaults (positive-limits.ts). */
export function resolveOutputEventLimits(input: Partial<OutputEventLimits> = {}, env: NodeJS.ProcessEnv = {}): OutputEventLimits {
  return resolvePositiveLimits(DEFAULTS, ENV, input, env);
}

export type OutputStream = "stdout" | "stderr" | "pty";

/** One window of one stream: the newest `data` the budget allowed, and how many bytes before it were left out. */
export interface OutputChunk {
  stream: OutputStream;
  data: Buffer;
  droppedBytes: number;
}

interface Pending {
  chunks: Buffer[];
  bytes: number;
  /** Bytes already left out of this window. */
  dropped: number;
}

export class OutputEventThrottle {
  readonly #limits: OutputEventLimits;
  readonly #publish: (chunks: OutputChunk[]) => Promise<void>;
  readonly #now: () => number;
  readonly #pending = new Map<OutputStream, Pending>();
  #tokens: number;
  #refilledAt: number;
  #timer: NodeJS.Timeout | undefined;
  /** The batch being published; the next one waits for it so events keep their order. */
  #inFlight: Promise<void> = Promise.resolve();

  constructor(limits: OutputEventLimits, publish: (chunks: OutputChunk[]) => Promise<void>, now: () => number = Date.now) {
    this.#limits = limits;
    this.#publish = publish;
    this.#now = now;
    this.#tokens = limits.burstBytes;
    this.#refilledAt = now();
  }

  push(stream: OutputStream, data: Uint8Array): void {
    let p = this.#pending.get(stream);
    if (!p) this.#pending.set(stream, (p = { chunks: [], bytes: 0, dropped: 0 }));
    p.chunks.push(Buffer.from(data));
    p.bytes += data.length;
    // Only the newest burst's worth can ever be published from one window; older bytes are counted, not kept.
    while (p.chunks.length > 1 && p.bytes - p.chunks[0]!.length >= this.#limits.burstBytes) {
      const oldest = p.chunks.shift()!;
      p.bytes -= oldest.length;
      p.dropped += oldest.length;
    }
    this.#timer ??= setTimeout(() => void this.flush(), this.#limits.windowMs).unref();
  }

  /** Publishes what is pending now; resolves once it (and everything before it) is on the bus. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const now = this.#now();
    this.#tokens = Math.min(this.#limits.burstBytes, this.#tokens + ((now - this.#refilledAt) * this.#limits.bytesPerSecond) / 1000);
    this.#refilledAt = now;
    const batch: OutputChunk[] = [];
    for (const [stream, p] of this.#pending) {
      const all = Buffer.concat(p.chunks);
      const keep = Math.min(all.length, Math.floor(this.#tokens));
      this.#tokens -= keep;
      batch.push({ stream, data: all.subarray(all.length - keep), droppedBytes: p.dropped + all.length - keep });
    }
    this.#pending.clear();
    if (batch.length > 0) this.#inFlight = this.#inFlight.catch(() => undefined).then(() => this.#publish(batch));
    return this.#inFlight;
  }
}
