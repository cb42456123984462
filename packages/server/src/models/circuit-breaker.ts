// One circuit per provider: closed while it answers; open after `failures` consecutive failures, refusing traffic
// for a back-off; then half-open, letting a single trial through — its success closes the circuit, its failure
// opens it again for twice as long (at most MAX_BACKOFF_MS).
const MAX_BACKOFF_MS = 600_000;

export type CircuitState = "closed" | "open" | "half-open";

interface Circuit {
  failures: number;
  openUntil: number;
  backoffMs: number;
  trialInFlight: boolean;
}

export class CircuitBreakers {
  readonly #circuits = new Map<string, Circuit>();
  readonly #settings: () => { breakerFailures: number; breakerBackoffMs: number };
  readonly #now: () => number;

  constructor(settings: () => { breakerFailures: number; breakerBackoffMs: number }, now: () => number = Date.now) {
    this.#settings = settings;
    this.#now = now;
  }

  state(provider: string): CircuitState {
    const c = this.#circuits.get(provider);
    if (!c || c.openUntil === 0) return "closed";
    return this.#now() < c.openUntil ? "open" : "half-open";
  }

  /** Whether a request may go to the provider now; a half-open circuit admits one trial at a time. */
  tryAcquire(provider: string): boolean {
    const c = this.#circuits.get(provider);
    const state = this.state(provider);
    if (state === "closed") return true;
    if (state === "open" || c!.trialInFlight) return false;
    c!.trialInFlight = true;
    return true;
  }

  success(provider: string): void {
    this.#circuits.delete(provider);
  }

  failure(provider: string): void {
    const { breakerFailures, breakerBackoffMs } = this.#settings();
    const c = this.#circuits.get(provider) ?? { failures: 0, openUntil: 0, backoffMs: breakerBackoffMs, trialInFlight: false };
    this.#circuits.set(provider, c);
    c.failures++;
    if (c.trialInFlight) {
      // A failed trial: open again, for longer.
      c.trialInFlight = false;
      c.backoffMs = Math.min(c.backoffMs * 2, MAX_BACKOFF_MS);
      c.openUntil = this.#now() + c.backoffMs;
    } else if (c.openUntil === 0 && c.failures >= breakerFailures) {
      c.openUntil = this.#now() + c.backoffMs;
    }
  }

  /** A trial that ended without a verdict (the client went away) frees the slot for the next one. */
  release(provider: string): void {
    const c = this.#circuits.get(provider);
    if (c) c.trialInFlight = false;
  }

  forget(provider: string): void {
    this.#circuits.delete(provider);
  }
}
