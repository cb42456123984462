// A bash context: one long-lived non-interactive bash reading commands from a pipe. Each cell is written to a
// file and sourced (so `cd`, variables and functions persist), with stdin from /dev/null so the cell cannot eat
// the commands that follow; a random marker printed afterwards on stdout and stderr tells where the cell's
// output ends and carries its exit status. SIGINT makes the sourced file return (a trap), so an interrupted
// cell ends and the shell, with its state, stays.
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { AsyncQueue } from "../../async-queue.js";
import { KernelExitedError, type KernelExit } from "../../errors.js";
import type { ExecuteOptions, Kernel, KernelEvent, StartKernelOptions } from "../kernel.js";
import { KernelProcess } from "../kernel-process.js";

export interface BashKernelOptions extends StartKernelOptions {
  runDir: string;
  /** @default "/bin/bash" */
  shell?: string;
}

/** Functions the shell gets at start: environment changes with restore, as the other kernels have them. */
const PRELUDE = `
trap 'return 130 2>/dev/null' INT
__burrow_restore=()
__burrow_env_push() {
  local __r="" __k
  while (($# >= 2)); do
    __k=$1
    if [[ -v $__k ]]; then __r+="export $__k=$(printf '%q' "\${!__k}");"; else __r+="unset $__k;"; fi
    export "$__k=$2"
    shift 2
  done
  __burrow_restore+=("$__r")
}
__burrow_env_pop() {
  local __n=\${#__burrow_restore[@]}
  ((__n > 0)) || return 0
  eval "\${__burrow_restore[__n-1]}"
  unset "__burrow_restore[__n-1]"
}
`;

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function pairs(vars: Record<string, string>): string {
  return Object.entries(vars)
    .map(([k, v]) => `${k} ${shellQuote(v)}`)
    .join(" ");
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function checkNames(vars: Record<string, string>): void {
  for (const key of Object.keys(vars)) {
    if (!NAME.test(key)) throw new Error(`'${key}' is not a valid environment variable name for bash`);
  }
}

interface PendingRun {
  marker: string;
  queue: AsyncQueue<KernelEvent>;
  /** Text held back because it may be the start of the marker. */
  held: { stdout: string; stderr: string };
  seen: { stdout: boolean; stderr: boolean };
  status: number | undefined;
  silent: boolean;
}

export class BashKernel implements Kernel {
  readonly language = "bash";
  readonly #proc: KernelProcess;
  readonly #runDir: string;
  readonly #decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  #executionCount = 0;
  #run: PendingRun | undefined;
  #exit: KernelExit | undefined;

  private constructor(opts: BashKernelOptions) {
    this.#runDir = opts.runDir;
    this.#proc = new KernelProcess({
      argv: [opts.shell ?? "/bin/bash", "--noprofile", "--norc"],
      cwd: opts.cwd,
      env: opts.env,
      stdin: "pipe",
      onOutput: (name, chunk) => this.#output(name, chunk),
    });
    this.#proc.child.stdin?.on("error", () => undefined);
    void this.#proc.exited.then((exit) => {
      this.#exit = exit;
      this.#run?.queue.fail(new KernelExitedError(this.language, exit));
      this.#run = undefined;
    });
  }

  static async start(opts: BashKernelOptions): Promise<BashKernel> {
    const kernel = new BashKernel(opts);
    kernel.#write(PRELUDE);
    // The first (silent) run proves the shell reads its commands.
    for await (const event of kernel.execute("true", { silent: true })) void event;
    return kernel;
  }

  get pid(): number | undefined {
    return this.#proc.pid;
  }

  get exited(): Promise<KernelExit> {
    return this.#proc.exited;
  }

  async *execute(code: string, opts: ExecuteOptions = {}): AsyncIterable<KernelEvent> {
    if (this.#exit) throw new KernelExitedError(this.language, this.#exit);
    const silent = opts.silent ?? false;
    if (!silent) {
      this.#executionCount++;
      yield { type: "execution_count", count: this.#executionCount };
    }
    const marker = `__burrow_done_${randomBytes(12).toString("hex")}`;
    const file = join(this.#runDir, `${marker}.sh`);
    await writeFile(file, code.endsWith("\n") ? code : `${code}\n`, { mode: 0o600 });
    const run: PendingRun = {
      marker,
      queue: new AsyncQueue(),
      held: { stdout: "", stderr: "" },
      seen: { stdout: false, stderr: false },
      status: undefined,
      silent,
    };
    this.#run = run;
    try {
      this.#write(`source ${shellQuote(file)} </dev/null; printf '%s %d\\n' ${marker} $?; printf '%s\\n' ${marker} >&2\n`);
      yield* run.queue;
      if (run.status !== undefined && run.status !== 0 && !silent) {
        yield { type: "error", name: "CommandExitError", value: `exit status ${run.status}`, traceback: `the cell ended with exit status ${run.status}` };
      }
    } finally {
      if (this.#run === run) this.#run = undefined;
      await rm(file, { force: true });
    }
  }

  interrupt(): void {
    this.#proc.signalGroup("SIGINT");
  }

  async setEnv(vars: Record<string, string>): Promise<void> {
    checkNames(vars);
    const exports = Object.entries(vars).map(([k, v]) => `export ${k}=${shellQuote(v)}`);
    if (exports.length > 0) await this.#silent(exports.join("\n"));
  }

  async pushEnv(vars: Record<string, string>): Promise<void> {
    checkNames(vars);
    await this.#silent(`__burrow_env_push ${pairs(vars)}`);
  }

  async popEnv(): Promise<void> {
    await this.#silent("__burrow_env_pop");
  }

  async close(): Promise<void> {
    await this.#proc.kill();
  }

  async #silent(code: string): Promise<void> {
    for await (const event of this.execute(code, { silent: true })) void event;
  }

  #write(text: string): void {
    this.#proc.child.stdin?.write(text);
  }

  #output(name: "stdout" | "stderr", chunk: Buffer): void {
    const text = this.#decoders[name].write(chunk);
    const run = this.#run;
    if (!run || run.seen[name]) {
      this.#proc.appendOutput(text);
      return;
    }
    const buffered = run.held[name] + text;
    const at = buffered.indexOf(run.marker);
    if (at < 0) {
      // Keep back what could be the beginning of a marker split across reads.
      const keep = Math.min(buffered.length, run.marker.length - 1);
      this.#emit(run, name, buffered.slice(0, buffered.length - keep));
      run.held[name] = buffered.slice(buffered.length - keep);
      return;
    }
    this.#emit(run, name, buffered.slice(0, at));
    run.held[name] = "";
    if (name === "stdout") {
      const status = /^ (\d+)/.exec(buffered.slice(at + run.marker.length));
      run.status = status?.[1] ? Number(status[1]) : undefined;
    }
    run.seen[name] = true;
    if (run.seen.stdout && run.seen.stderr) run.queue.end();
  }

  #emit(run: PendingRun, name: "stdout" | "stderr", text: string): void {
    if (!text || run.silent) return;
    run.queue.push({ type: "stream", name, text, timestamp: new Date().toISOString() });
  }
}
