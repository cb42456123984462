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

export function createStderrLogger(): Logger {
  return {
    info: (msg, fields) => void process.stderr.write(line("info", msg, fields)),
    warn: (msg, fields) => void process.stderr.write(line("warn", msg, fields)),
    error: (msg, fields) => void process.stderr.write(line("error", msg, fields)),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
