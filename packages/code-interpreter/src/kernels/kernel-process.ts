// A kernel's OS process: its own process group (so interrupting or killing it reaches what the user's code
// started), a raised OOM score (the out-of-memory killer takes a kernel before the server or envd), the tail of
// its own output for diagnosis, and an `exited` promise that says how it ended.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import type { KernelExit } from "../errors.js";

/** How far above the server and envd a kernel stands in the OOM killer's choice (range −1000…1000). */
const KERNEL_OOM_SCORE_ADJ = 800;
const OUTPUT_TAIL_CHARS = 4000;

const OOM_COUNTER_FILES = ["/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"];

/** Cgroup-wide count of OOM kills; undefined where no counter is visible. */
export function oomKillCount(): number | undefined {
  for (const file of OOM_COUNTER_FILES) {
    try {
      const match = /^oom_kill (\d+)$/m.exec(readFileSync(file, "utf8"));
      if (match?.[1]) return Number(match[1]);
    } catch {
      // not this cgroup version
    }
  }
  return undefined;
}

export interface SpawnKernelProcessOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** Extra stdio entries after stdin/stdout/stderr ('ipc' for Node workers). */
  extraStdio?: ("ipc" | "pipe" | "ignore")[];
  /** Where the process's stdin comes from; 'pipe' for shells driven over stdin. @default "ignore" */
  stdin?: "ignore" | "pipe";
  /** Receives stdout/stderr bytes; when absent they only feed the diagnostic tail. */
  onOutput?: (name: "stdout" | "stderr", chunk: Buffer) => void;
}

export class KernelProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<KernelExit>;
  #tail = "";
  #stopping = false;
  #ended = false;

  constructor(opts: SpawnKernelProcessOptions) {
    const [command, ...args] = opts.argv;
    if (!command) throw new Error("empty kernel command");
    const oomBefore = oomKillCount();
    this.child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: [opts.stdin ?? "ignore", "pipe", "pipe", ...(opts.extraStdio ?? [])],
    });
    for (const name of ["stdout", "stderr"] as const) {
      this.child[name]?.on("data", (chunk: Buffer) => {
        if (opts.onOutput) opts.onOutput(name, chunk);
        else this.#tail = (this.#tail + chunk.toString("utf8")).slice(-OUTPUT_TAIL_CHARS);
      });
    }
    this.exited = new Promise<KernelExit>((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.#ended) return;
        this.#ended = true;
        const oomAfter = oomKillCount();
        resolve({
          code,
          signal,
          oomKilled: signal === "SIGKILL" && !this.#stopping && oomBefore !== undefined && oomAfter !== undefined && oomAfter > oomBefore,
          byServer: this.#stopping,
          output: this.#tail,
        });
      };
      this.child.once("exit", finish);
      // spawn failures (ENOENT…) come as 'error' without 'exit'
      this.child.once("error", (err) => {
        this.#tail += `\n${err.message}`;
        finish(null, null);
      });
    });
    if (this.child.pid !== undefined) {
      try {
        writeFileSync(`/proc/${this.child.pid}/oom_score_adj`, String(KERNEL_OOM_SCORE_ADJ));
      } catch {
        // not permitted here: the kernel keeps the default score
      }
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Diagnostic output so far (what the process itself printed, not user output routed elsewhere). */
  get output(): string {
    return this.#tail;
  }

  appendOutput(text: string): void {
    this.#tail = (this.#tail + text).slice(-OUTPUT_TAIL_CHARS);
  }

  /** Signal the whole process group (the kernel and whatever the user's code started). */
  signalGroup(signal: NodeJS.Signals): void {
    if (this.#ended || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      try {
        this.child.kill(signal);
      } catch {
        // already gone
      }
    }
  }

  /** Signal the kernel process alone. */
  signal(signal: NodeJS.Signals): void {
    if (this.#ended) return;
    try {
      this.child.kill(signal);
    } catch {
      // already gone
    }
  }

  /** SIGKILL the group and wait for the exit. */
  async kill(): Promise<KernelExit> {
    this.#stopping = true;
    this.signalGroup("SIGKILL");
    return this.exited;
  }
}
