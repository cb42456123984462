import { abortError } from "./errors.js";

/** Resolves after `ms`, or rejects with Canceled when the signal aborts; the timer is always cleared. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(abortError(signal!));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A one-shot wake-up that many waiters can share; `fire()` releases all of them and re-arms. */
export class Notifier {
  private resolve!: () => void;
  private promise!: Promise<void>;

  constructor() {
    this.arm();
  }

  private arm(): void {
    this.promise = new Promise((r) => (this.resolve = r));
  }

  fire(): void {
    const r = this.resolve;
    this.arm();
    r();
  }

  /** Waits for the next fire(), at most `ms`; resolves (never rejects) except on abort. */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise((resolve, reject) => {
      let finished = false;
      const finish = (err?: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(t);
        signal?.removeEventListener("abort", onAbort);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onAbort = () => finish(abortError(signal!));
      const t = setTimeout(() => finish(), Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
      void this.promise.then(() => finish());
    });
  }
}
