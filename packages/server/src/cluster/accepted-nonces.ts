// The nonces of forwarded marks a node accepted (forwarded-header.ts), each kept until its signature could no longer
// verify anyway (its time has left the window), so that the same signature is accepted once. Memory is bounded by
// time: what a node accepts in one window. Entries are in the order they were accepted, and expiries differ only by
// the senders' clocks, so dropping expired ones from the front on each accept keeps the map near that size; a full
// sweep runs when the front holds back entries behind it (a sender's clock far ahead).
export class AcceptedNonces {
  /** Nonce → when it may be forgotten (unix ms). */
  readonly #until = new Map<string, number>();
  #sweepAt = 0;

  /** Remember `nonce` until `until`; false when it is remembered already (a replay). */
  take(nonce: string, until: number, now: number): boolean {
    this.#forget(now);
    if (this.#until.has(nonce)) return false;
    this.#until.set(nonce, until);
    return true;
  }

  get size(): number {
    return this.#until.size;
  }

  #forget(now: number): void {
    for (const [nonce, until] of this.#until) {
      if (until > now) break;
      this.#until.delete(nonce);
    }
    // The front may be a nonce that lives longer than the ones behind it: once a window, everything is looked at.
    if (now < this.#sweepAt) return;
    this.#sweepAt = now + SWEEP_EVERY_MS;
    for (const [nonce, until] of this.#until) if (until <= now) this.#until.delete(nonce);
  }
}

const SWEEP_EVERY_MS = 60_000;
