// One JSON line per notable event on stderr: the start command's output, which the orchestrator shows when the
// server fails to come up. Logging never throws (a full sandbox disk makes every write fail).
import { writeSync } from "node:fs";

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

function line(level: string, msg: string, fields?: Record<string, unknown>): string {
  const rec = { t: new Date().toISOString(), level, msg, ...fields };
  return JSON.stringify(rec, (_k, v: unknown) => (v instanceof Error ? v.message : v)) + "\n";
}

function writeStderr(text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(2, buf, off);
  } catch {
    // dropped
  }
}

export function createStderrLogger(): Logger {
  return {
    info: (msg, fields) => writeStderr(line("info", msg, fields)),
    warn: (msg, fields) => writeStderr(line("warn", msg, fields)),
    error: (msg, fields) => writeStderr(line("error", msg, fields)),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
