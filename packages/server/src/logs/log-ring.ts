// The entries kept of one sandbox's log: bounded by count and bytes, oldest dropped first.
import type { SandboxLogEntry } from "./log-entry.js";

export class LogRing {
  readonly #entries: SandboxLogEntry[] = [];
  #head = 0;
  #bytes = 0;

  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {}

  push(entry: SandboxLogEntry): void {
    this.#entries.push(entry);
    this.#bytes += entry.size;
    while (this.#entries.length - this.#head > this.maxLines || (this.#bytes > this.maxBytes && this.#entries.length - this.#head > 1)) {
      this.#bytes -= this.#entries[this.#head]!.size;
      this.#head++;
    }
    // Compact now and then instead of shifting on every drop.
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** Entries oldest first (a copy). */
  entries(): SandboxLogEntry[] {
    return this.#entries.slice(this.#head);
  }
}
