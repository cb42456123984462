// Every sandbox's log kept in a ring on the server: read from the orchestrator (envd's stderr, which holds envd's
// own lines and its processes' output) every pollIntervalMs and right before a request for it is answered, and
// kept for retentionMs after the sandbox ended. The orchestrator is asked only for bytes it has not handed out yet.
import type { Orchestrator } from "@burrow/orchestrator";
import type { Logger } from "pino";
import { parseLogLine, type SandboxLogEntry } from "./log-entry.js";
import type { SandboxLogLimits } from "./log-limits.js";
import { LogRing } from "./log-ring.js";

/** Most bytes asked of the orchestrator at once; a read continues until it has caught up. */
const READ_CHUNK = 256 * 1024;
/** A line this long without a newline is taken as it is. */
const MAX_PARTIAL = 64 * 1024;

interface TrackedLog {
  ring: LogRing;
  owner?: string | undefined;
  offset: number;
  partial: string;
  endedAt?: number;
  /** The read under way, which later readers wait for instead of reading the same bytes again. */
  reading?: Promise<void>;
}

export interface SandboxLogsDeps {
  orchestrator: Orchestrator;
  limits: SandboxLogLimits;
  /** Ids of the sandboxes the control plane knows (running and paused). */
  liveIds: () => Iterable<string>;
  logger: Logger;
  /** The team owning a live sandbox, recorded with its log so that the log's readers are checked after it ended. */
  ownerOf?: (sandboxId: string) => string | undefined;
  /** Every entry as it is read (alerts watch for start command crashes). */
  onEntry?: (sandboxId: string, entry: SandboxLogEntry) => void;
}

export class SandboxLogs {
  readonly #d: SandboxLogsDeps;
  readonly #logs = new Map<string, TrackedLog>();
  #timer: NodeJS.Timeout | undefined;
  #polling = false;
  #closed = false;

  constructor(deps: SandboxLogsDeps) {
    this.#d = deps;
  }

  /** Whether the orchestrator serves logs at all. */
  get supported(): boolean {
    return typeof this.#d.orchestrator.readSandboxLog === "function";
  }

  start(): void {
    if (this.#timer || this.#closed || !this.supported) return;
    this.#timer = setInterval(() => void this.poll(), this.#d.limits.pollIntervalMs);
    this.#timer.unref();
  }

  /** Read every known sandbox's new lines now; forget ended sandboxes past their retention. */
  async poll(): Promise<void> {
    if (this.#polling || this.#closed) return;
    this.#polling = true;
    try {
      for (const id of this.#d.liveIds()) if (!this.#logs.has(id)) this.#logs.set(id, this.#newLog(id));
      const expired = Date.now() - this.#d.limits.retentionMs;
      for (const [id, log] of this.#logs) {
        if (log.endedAt !== undefined) {
          if (log.endedAt < expired) this.#logs.delete(id);
          continue;
        }
        await this.#read(id, log);
      }
    } finally {
      this.#polling = false;
    }
  }

  /**
   * The sandbox's entries, oldest first, after reading what is new; undefined when the server has no log of it (never
   * seen, or ended longer ago than the retention).
   */
  async entries(sandboxId: string, opts: { live: boolean; team?: string | undefined }): Promise<SandboxLogEntry[] | undefined> {
    let log = this.#logs.get(sandboxId);
    if (!log && opts.live && this.supported) this.#logs.set(sandboxId, (log = this.#newLog(sandboxId)));
    if (!log) return undefined;
    // Another team's ended sandbox is as unknown as one never seen.
    if (!opts.live && opts.team !== undefined && log.owner !== undefined && log.owner !== opts.team) return undefined;
    if (log.endedAt === undefined) await this.#read(sandboxId, log);
    return log.ring.entries();
  }

  /** Read the rest of a sandbox's log before it goes away (called right before the orchestrator kills it). */
  async flush(sandboxId: string): Promise<void> {
    if (!this.supported || this.#closed) return;
    let log = this.#logs.get(sandboxId);
    // One created and killed between two polls has not been seen yet.
    if (!log) this.#logs.set(sandboxId, (log = this.#newLog(sandboxId)));
    if (log.endedAt === undefined) await this.#read(sandboxId, log);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#logs.clear();
  }

  #newLog(sandboxId: string): TrackedLog {
    const owner = this.#d.ownerOf?.(sandboxId);
    return { ring: new LogRing(this.#d.limits.maxLines, this.#d.limits.maxBytes), offset: 0, partial: "", owner };
  }

  #read(sandboxId: string, log: TrackedLog): Promise<void> {
    log.reading ??= this.#readNow(sandboxId, log).finally(() => (log.reading = undefined));
    return log.reading;
  }

  async #readNow(sandboxId: string, log: TrackedLog): Promise<void> {
    const read = this.#d.orchestrator.readSandboxLog;
    if (!read) return;
    try {
      for (;;) {
        const chunk = await read.call(this.#d.orchestrator, sandboxId, log.offset, READ_CHUNK);
        if (!chunk) {
          this.#end(log);
          return;
        }
        // The file was emptied (envd rotates it): what was half a line is gone with it.
        if (chunk.next < log.offset) log.partial = "";
        if (chunk.data.length === 0) {
          log.offset = chunk.next;
          return;
        }
        log.offset = chunk.next;
        this.#append(sandboxId, log, chunk.data.toString("utf8"));
        if (chunk.data.length < READ_CHUNK) return;
      }
    } catch (err) {
      this.#d.logger.warn({ err, sandboxId }, "could not read the sandbox's log");
    }
  }

  #append(sandboxId: string, log: TrackedLog, text: string): void {
    const lines = (log.partial + text).split("\n");
    log.partial = lines.pop() ?? "";
    if (log.partial.length > MAX_PARTIAL) {
      lines.push(log.partial);
      log.partial = "";
    }
    const now = new Date();
    for (const line of lines) {
      if (line.trim() === "") continue;
      const entry = parseLogLine(line, now);
      log.ring.push(entry);
      try {
        this.#d.onEntry?.(sandboxId, entry);
      } catch (err) {
        this.#d.logger.error({ err, sandboxId }, "sandbox log listener failed");
      }
    }
  }

  #end(log: TrackedLog): void {
    if (log.endedAt !== undefined) return;
    if (log.partial.trim() !== "") log.ring.push(parseLogLine(log.partial, new Date()));
    log.partial = "";
    log.endedAt = Date.now();
  }
}
