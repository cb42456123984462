// One line of a sandbox's log (envd's stderr) as E2B's SandboxLogEntry: envd writes JSON lines
// `{"t", "level", "msg", ...fields}`; anything else (the launcher's or init's own output) is an info line as written.

export type LogLevel = "debug" | "info" | "warn" | "error";

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

export interface SandboxLogEntry {
  timestamp: Date;
  level: LogLevel;
  message: string;
  /** E2B's `fields` are strings only. */
  fields: Record<string, string>;
  /** What the entry costs the ring, in bytes (message and fields). */
  size: number;
}

const isLevel = (v: unknown): v is LogLevel => typeof v === "string" && (LOG_LEVELS as readonly string[]).includes(v);

export function parseLogLine(line: string, now: Date): SandboxLogEntry {
  let rec: unknown;
  if (line.startsWith("{")) {
    try {
      rec = JSON.parse(line);
    } catch {
      rec = undefined;
    }
  }
  if (!rec || typeof rec !== "object" || Array.isArray(rec) || typeof (rec as { msg?: unknown }).msg !== "string") {
    return { timestamp: now, level: "info", message: line, fields: {}, size: line.length };
  }
  const { t, level, msg, ...rest } = rec as Record<string, unknown>;
  const parsed = typeof t === "string" ? new Date(t) : undefined;
  const fields: Record<string, string> = {};
  let size = (msg as string).length;
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined || value === null) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    fields[key] = text;
    size += key.length + text.length;
  }
  return {
    timestamp: parsed && !Number.isNaN(parsed.getTime()) ? parsed : now,
    level: isLevel(level) ? level : "info",
    message: msg as string,
    fields,
    size,
  };
}
