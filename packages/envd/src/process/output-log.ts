// Process output into envd's log, one line per entry, so the host can serve a sandbox's logs (E2B's
// GET /v2/sandboxes/{id}/logs) from the one file it already collects: envd's stderr. Cheaper than teeing the
// Connect streams in the server's gateway (which never sees the start command's or the bus runner's output) and
// than a second channel out of the sandbox.
//
// The log lives on the sandbox's own disk, so what it costs is bounded: a byte budget per sandbox (a token bucket
// shared by every process; output past it is counted and reported in one line when the budget is back), lines cut
// at MAX_LINE bytes, and PTY output left out (a terminal's echo is not a log, and it would echo what users type).
import type { Logger } from "../log.js";
import type { OutputStream } from "./process-io.js";

/** Longest line logged; the rest of a longer line is logged as further lines. */
const MAX_LINE = 4096;
/** Output logged per second, on average, across all processes of the sandbox. */
const RATE_BYTES_PER_SEC = 256 * 1024;
/** Output that may be logged at once after a quiet period. */
const BURST_BYTES = 1024 * 1024;

export interface OutputLogBudget {
  /** Whether `bytes` more may be logged now; counts what is refused. */
  take(bytes: number): boolean;
  /** Bytes refused since the last call, and resets the count. */
  dropped(): number;
}

export function createOutputLogBudget(now: () => number = () => performance.now()): OutputLogBudget {
  let tokens = BURST_BYTES;
  let last = now();
  let refused = 0;
  return {
    take(bytes) {
      const t = now();
      tokens = Math.min(BURST_BYTES, tokens + ((t - last) / 1000) * RATE_BYTES_PER_SEC);
      last = t;
      if (tokens < bytes) {
        refused += bytes;
        return false;
      }
      tokens -= bytes;
      return true;
    },
    dropped() {
      const n = refused;
      refused = 0;
      return n;
    },
  };
}

export interface ProcessLogFields {
  pid: number;
  tag?: string | undefined;
}

/**
 * A sink for one process's output: splits each stream into lines and logs them (stdout at info, stderr at error).
 * `end()` logs what is left of unterminated lines.
 */
export function createOutputLogger(log: Logger, budget: OutputLogBudget, fields: ProcessLogFields) {
  const partial: Partial<Record<OutputStream, string>> = {};
  const base = fields.tag ? { pid: fields.pid, tag: fields.tag } : { pid: fields.pid };

  const emit = (stream: OutputStream, text: string) => {
    if (!budget.take(text.length)) return;
    const lost = budget.dropped();
    if (lost > 0) log.warn("process output not logged: over the log budget", { ...base, droppedBytes: lost });
    const entry = { ...base, stream };
    if (stream === "stderr") log.error(text, entry);
    else log.info(text, entry);
  };

  return {
    data(stream: OutputStream, data: Buffer): void {
      if (stream === "pty") return;
      let text = (partial[stream] ?? "") + data.toString("utf8");
      let nl: number;
      while ((nl = text.indexOf("\n")) >= 0) {
        emit(stream, text.slice(0, nl).replace(/\r$/, ""));
        text = text.slice(nl + 1);
      }
      while (text.length > MAX_LINE) {
        emit(stream, text.slice(0, MAX_LINE));
        text = text.slice(MAX_LINE);
      }
      partial[stream] = text;
    },
    end(): void {
      for (const stream of ["stdout", "stderr"] as const) {
        const rest = partial[stream];
        if (rest) emit(stream, rest);
        partial[stream] = "";
      }
    },
  };
}
