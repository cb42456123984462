// Operations that take a running sandbox down for a moment and bring the same sandbox back (a rollback: halt, swap
// its files, boot; 1–3 s). Its row stays "running" throughout, so without a word the gateway would proxy to an envd
// that is not there and answer 502, which the SDK reports as "sandbox not running". While such an operation runs
// the sandbox is *held*: the gateway makes the requests routed to it wait until the operation ends (as a request
// waits for an auto-resume), then serves them.

export class SandboxHolds {
  /** Settles (never rejects) when the operation holding the sandbox ends. */
  readonly #pending = new Map<string, Promise<void>>();
  readonly #listeners = new Set<(sandboxId: string) => void>();

  /** Run `work` with the sandbox held; its outcome is the caller's. Holds of one sandbox nest. */
  async run<T>(sandboxId: string, work: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const ended = new Promise<void>((resolve) => (release = resolve));
    const outer = this.#pending.get(sandboxId);
    // Set before anything else happens, so that no request slips through between the start of `work` and the hold.
    const held = outer ? Promise.all([outer, ended]).then(() => undefined) : ended;
    this.#pending.set(sandboxId, held);
    for (const listener of this.#listeners) {
      try {
        listener(sandboxId);
      } catch {
        // A listener's failure is its own; the operation goes on.
      }
    }
    try {
      return await work();
    } finally {
      release();
      if (this.#pending.get(sandboxId) === held) {
        if (outer) this.#pending.set(sandboxId, outer);
        else this.#pending.delete(sandboxId);
      }
    }
  }

  /** Settles when the sandbox is no longer held; undefined when it is not held now. */
  pending(sandboxId: string): Promise<void> | undefined {
    return this.#pending.get(sandboxId);
  }

  /** Called when a hold begins (the gateway drops the sandbox's connections: its processes are about to end). */
  onHold(listener: (sandboxId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
