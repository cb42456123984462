import { fstatSync, ftruncateSync, writeSync } from "node:fs";

/** One line per notable event, on stderr, so the orchestrator can collect it from the sandbox's init. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

function line(level: string, msg: string, fields?: Record<string, unknown>): string {
  const rec = { t: new Date().toISOString(), level, msg, ...fields };
  return JSON.stringify(rec, (_k, v: unknown) => (v instanceof Error ? v.message : v)) + "\n";
}

/**
 * Best effort: a line that cannot be written is dropped, and logging never throws. In a sandbox stderr is a file
 * on the sandbox's own quota-limited disk, so once the disk is full every write fails (EDQUOT). Through
 * `process.stderr` that failure destroys the stream and surfaces as an uncaught 'error'; logging it fails again,
 * and the storm of uncaught exceptions lands in whatever callback runs, e.g. the HTTP parser of an upload in
 * flight, which then answers a bare "400 Bad Request" and drops the connection instead of envd's 507. Plain
 * synchronous writes to fd 2 fail one line at a time, and logging resumes once space is freed.
 */
function writeStderr(text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(2, buf, off);
  } catch {
    // dropped (disk full, closed or non-blocking pipe that is full)
  }
  rotateWhenFull(off);
}

/**
 * In a sandbox stderr is the host's envd.log (opened for appending), which the host reads as it grows and serves as
 * the sandbox's logs; process output goes there too (output-log.ts). So that it never fills the sandbox's disk,
 * envd empties it past MAX_LOG_FILE bytes: the host notices the file shrank and reads from its start again, losing at
 * most what it had not read yet (it reads every second or so). Writes keep appending at the new end.
 */
const MAX_LOG_FILE = 8 * 1024 * 1024;
let stderrIsFile: boolean | undefined;
let written = 0;

function rotateWhenFull(bytes: number): void {
  written += bytes;
  if (written < MAX_LOG_FILE) return;
  written = 0;
  try {
    stderrIsFile ??= fstatSync(2).isFile();
    if (stderrIsFile) ftruncateSync(2, 0);
  } catch {
    // best effort, like every write here
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
