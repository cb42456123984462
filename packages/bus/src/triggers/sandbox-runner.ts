import type { CodeSpec, ProcessSettings, RunTarget, TerminalSettings } from "@burrow/protocol";

export type { CodeSpec, ProcessSettings, RunTarget, TerminalSettings };

export interface RunOptions extends ProcessSettings {
  terminal?: TerminalSettings;
  signal?: AbortSignal;
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** The sandbox it ran in (useful when a fresh one was created from a template). */
  sandboxId?: string;
}


/**
 * What the trigger engine and task workers need from sandboxes; the server injects an implementation backed by
 * real sandboxes. A runner without runCode gets code turned into a command by `codeToCommand`.
 */
export interface SandboxRunner {
  runCommand(target: RunTarget, cmd: string, opts: RunOptions): Promise<RunResult>;
  runCode?(target: RunTarget, code: CodeSpec, opts: RunOptions): Promise<RunResult>;
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
