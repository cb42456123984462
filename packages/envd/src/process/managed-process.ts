import { EventQueue } from "../rpc/event-queue.js";
import { exitInfo, type ExitInfo } from "./exit-status.js";
import { signalProcessTree, type OutputStream, type ProcessIO } from "./process-io.js";

export type ProcessOutput =
  | { kind: "data"; stream: OutputStream; data: Buffer }
  | { kind: "end"; end: ExitInfo };

export interface ProcessDescription {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
  tag?: string;
}

// Per-subscriber buffering. Above HIGH the process's output is paused (backpressure, nothing lost for attached
// clients); it resumes when every subscriber is below LOW. With no subscriber output is read and dropped, so a
// background process never blocks on a full pipe and envd's memory stays bounded.
const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;

const sizeOf = (o: ProcessOutput) => (o.kind === "data" ? o.data.length : 0);

/** A process started by envd: fans its output out to attached streams and remembers how it ended. */
export class ManagedProcess {
  readonly pid: number;
  readonly isPty: boolean;
  #subs = new Set<EventQueue<ProcessOutput>>();
  #paused = false;
  #end: ExitInfo | undefined;
  #lifetimeTimer: NodeJS.Timeout | undefined;
  readonly ended: Promise<ExitInfo>;

  constructor(
    private readonly io: ProcessIO,
    readonly description: ProcessDescription,
    /** Sees all output, whoever is attached (envd's log of process output). */
    private readonly tap?: (o: ProcessOutput) => void,
  ) {
    this.pid = io.pid;
    this.isPty = io.isPty;
    io.onData((stream, data) => this.#publish({ kind: "data", stream, data }));
    this.ended = new Promise((resolve) => {
      io.onExit((code, signal) => {
        clearTimeout(this.#lifetimeTimer);
        this.#end = exitInfo(code, signal);
        this.#publish({ kind: "end", end: this.#end });
        for (const q of this.#subs) q.close();
        this.#subs.clear();
        resolve(this.#end);
      });
    });
  }

  get end(): ExitInfo | undefined {
    return this.#end;
  }
  get hasInput(): boolean {
    return this.io.hasInput;
  }

  /** Attach a stream. Output from now on is delivered; a finished process yields just its end event. */
  subscribe(): EventQueue<ProcessOutput> {
    const q: EventQueue<ProcessOutput> = new EventQueue(sizeOf, () => this.#maybeResume());
    if (this.#end) {
      q.push({ kind: "end", end: this.#end });
      q.close();
    } else {
      this.#subs.add(q);
    }
    return q;
  }

  /** Detach a stream whose client is gone (or done): what it had not read yet is dropped. */
  unsubscribe(q: EventQueue<ProcessOutput>): void {
    this.#subs.delete(q);
    q.discard();
    this.#maybeResume();
  }

  /** Kill the process when its lifetime (Start's Connect-Timeout-Ms) elapses, whoever is attached. */
  setLifetime(ms: number): void {
    this.#lifetimeTimer = setTimeout(() => this.signal("SIGKILL"), ms);
    this.#lifetimeTimer.unref();
  }

  write(data: Buffer): void {
    this.io.write(data);
  }
  closeStdin(): void {
    this.io.closeStdin();
  }
  resize(cols: number, rows: number): void {
    this.io.resize(cols, rows);
  }
  signal(sig: NodeJS.Signals): void {
    if (!this.#end) signalProcessTree(this.pid, sig);
  }

  #publish(o: ProcessOutput): void {
    this.tap?.(o);
    for (const q of this.#subs) {
      q.push(o);
      if (!this.#paused && q.bytes > HIGH_WATER) {
        this.#paused = true;
        this.io.pause();
      }
    }
  }

  #maybeResume(): void {
    if (!this.#paused) return;
    for (const q of this.#subs) if (q.bytes > LOW_WATER) return;
    this.#paused = false;
    this.io.resume();
  }
}
