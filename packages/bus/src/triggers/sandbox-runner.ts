import type { CodeSpec, ProcessSettings, RunTarget, TerminalSettings } from "@burrow/protocol";

export type { CodeSpec, ProcessSettings, RunTarget, TerminalSettings };

export interface RunOptions extends ProcessSettings {
  terminal?: TerminalSettings;
  signal?: AbortSignal;
  /** The task being run, when a TaskWorker runs it (code runs name their events after it). */
  taskId?: string;
}

export interface RunResult {
  /** Code runs: 0, or 1 when the code raised an error. */
  exitCode: number;
  stdout: string;
  stderr: string;
  /** The sandbox it ran in (useful when a fresh one was created from a template). */
  sandboxId?: string;
  /** Code runs: what the execution server returned besides output. */
  execution?: CodeExecution;
}

/** The outcome of a code run beside its stdout and stderr. */
export interface CodeExecution {
  /** Results as the execution server streams them; formats too large to keep are left out (named in `omitted`). */
  results: Array<Record<string, unknown> & { omitted?: string[] }>;
  /** The error the code raised. */
  error?: { name: string; value: string; traceback: string };
  executionCount?: number;
}

/**
 * What the trigger engine and task workers need from sandboxes; the server injects an implementation backed by
 * real sandboxes, whose runCode runs code in the sandbox's execution server. A runner without runCode gets code
 * turned into a command by `codeToCommand`.
 */
export interface SandboxRunner {
  runCommand(target: RunTarget, cmd: string, opts: RunOptions): Promise<RunResult>;
  runCode?(target: RunTarget, code: CodeSpec, opts: RunOptions): Promise<RunResult>;
  /**
   * The server (another one sharing this bus: a node of a cluster) that must run a task in this target — the one with
   * the sandbox, or the one placement chose for a fresh sandbox; undefined: this one.
   */
  nodeFor?(target: RunTarget): string | undefined;
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function codeToCommand(c: CodeSpec): string {
  switch (c.language.toLowerCase()) {
    case "python":
    case "python3":
      return `python3 -c ${shellQuote(c.code)}`;
    case "js":
    case "javascript":
    case "node":
      return `node -e ${shellQuote(c.code)}`;
    case "bash":
    case "sh":
      return `bash -c ${shellQuote(c.code)}`;
    default:
      throw new Error(`no interpreter known for ${c.language}`);
  }
}
