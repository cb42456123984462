// E2B's sandbox log queries. v1 (`start`, `limit`): entries from `start` (ms), oldest first. v2 (`cursor`, `limit`,
// `direction`, `level`, `search`): `cursor` is a time in ms; forward returns entries at or after it, oldest first;
// backward (the default) entries at or before it (now without one), newest first. `level` is a minimum, `search` a
// case-sensitive substring of the message.
import { LOG_LEVELS, type LogLevel, type SandboxLogEntry } from "./log-entry.js";

export interface LogQuery {
  /** Start (forward) or end (backward) of the window, ms since the epoch. */
  cursor?: number | undefined;
  direction: "forward" | "backward";
  limit: number;
  level?: LogLevel | undefined;
  search?: string | undefined;
}

export const DEFAULT_LOG_LIMIT = 1000;

export function queryLog(entries: readonly SandboxLogEntry[], q: LogQuery): SandboxLogEntry[] {
  const minLevel = q.level ? LOG_LEVELS.indexOf(q.level) : 0;
  const matches = (e: SandboxLogEntry) =>
    LOG_LEVELS.indexOf(e.level) >= minLevel && (q.search === undefined || e.message.includes(q.search));
  const out: SandboxLogEntry[] = [];
  if (q.limit <= 0) return out;
  if (q.direction === "forward") {
    const from = q.cursor ?? -Infinity;
    for (const e of entries) {
      if (e.timestamp.getTime() < from || !matches(e)) continue;
      out.push(e);
      if (out.length >= q.limit) break;
    }
  } else {
    const to = q.cursor ?? Infinity;
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i]!;
      if (e.timestamp.getTime() > to || !matches(e)) continue;
      out.push(e);
      if (out.length >= q.limit) break;
    }
  }
  return out;
}
