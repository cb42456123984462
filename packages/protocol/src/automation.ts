// Wire shapes shared by the bus (server side) and the Burrow SDK (client side) for triggers and tasks.

/** Which sandbox events a rule reacts to; every field given must match. */
export interface SandboxEventFilter {
  sandboxId?: string;
  templateId?: string;
  category?: "lifecycle" | "proc" | "fs" | "code";
  /**
   * lifecycle: created, killed, timed_out, …; proc: started, output, exited; fs: create, write, remove, rename, chmod;
   * code: started, stdout, stderr, result, error, end.
   */
  type?: string;
  /** Every listed key must have exactly this value. */
  metadata?: Record<string, string>;
  /** fs events: the path must start with this. */
  pathPrefix?: string;
}

/** Where a command or code runs: an existing sandbox, or a fresh one from a template. */
export type RunTarget = { sandboxId: string } | { template: string };

export interface ProcessSettings {
  env?: Record<string, string>;
  cwd?: string;
  user?: string;
  /** @default 60000; 0: none */
  timeoutMs?: number;
}

export interface TerminalSettings {
  /** Run under a pseudo-terminal. */
  pty: boolean;
  cols?: number;
  rows?: number;
}

/** Code run by the sandbox's execution server (code-interpreter sandboxes), in the language's default context. */
export interface CodeSpec {
  /** python, javascript (js), typescript (ts), bash, r. */
  language: string;
  code: string;
}
