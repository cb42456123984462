// The log of one build: entries with timestamps, levels and step numbers, read in pages by offset the way the
// SDK polls (it adds the number of returned entries to its offset, and stops after an empty page).
import type { BuildLogEntry, BuildLogLevel } from "@burrow/protocol";

export type { BuildLogEntry, BuildLogLevel };

/** Entries per status page; infra returns at most 100 and the SDK relies on a cap to drain. */
export const LOG_PAGE_SIZE = 100;
/** Bound on kept entries so a chatty step cannot exhaust memory; the oldest are dropped (counted). */
const MAX_ENTRIES = 50_000;
/** Longest message kept per entry. */
const MAX_LINE = 4096;

export class BuildLog {
  private readonly entries: BuildLogEntry[] = [];
  private dropped = 0;
  private readonly listeners = new Set<(entry: BuildLogEntry) => void>();

  add(level: BuildLogLevel, message: string, step?: string): void {
    const entry: BuildLogEntry = { timestamp: new Date().toISOString(), level, message: message.slice(0, MAX_LINE), step };
    this.entries.push(entry);
    if (this.entries.length > MAX_ENTRIES) {
      this.entries.shift();
      this.dropped++;
    }
    for (const listener of this.listeners) listener(entry);
  }

  /** Entries from absolute offset `offset`, at most one page. */
  page(offset: number, limit = LOG_PAGE_SIZE): BuildLogEntry[] {
    const start = Math.max(0, offset - this.dropped);
    return this.entries.slice(start, start + limit);
  }

  /** The last `n` entries (for a failure reason). */
  tail(n: number): BuildLogEntry[] {
    return this.entries.slice(-n);
  }

  onEntry(listener: (entry: BuildLogEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Splits a byte stream into log lines, keeping a partial last line until more arrives. */
export class LineSplitter {
  private partial = "";
  private readonly decoder = new TextDecoder();
  constructor(private readonly emit: (line: string) => void) {}

  push(chunk: Uint8Array): void {
    const lines = (this.partial + this.decoder.decode(chunk, { stream: true })).split(/\r?\n/);
    this.partial = lines.pop() ?? "";
    for (const line of lines) this.emit(line);
    // A progress bar without newlines must not grow without bound.
    if (this.partial.length > MAX_LINE) {
      this.emit(this.partial);
      this.partial = "";
    }
  }

  flush(): void {
    const rest = this.partial + this.decoder.decode();
    this.partial = "";
    if (rest !== "") this.emit(rest);
  }
}
