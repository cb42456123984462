// A JavaScript or TypeScript context: a long-lived Node worker process (node-worker.ts) driven over IPC. The
// server prepares each cell (type stripping for TypeScript, then the REPL-style rewrite of cell-transform.ts)
// so the worker only compiles and runs it.
import { StringDecoder } from "node:string_decoder";
import { BurrowError } from "@burrow/protocol/errors";
import { AsyncQueue } from "../../async-queue.js";
import { KernelExitedError, type KernelExit } from "../../errors.js";
import type { ExecuteOptions, Kernel, KernelEvent, StartKernelOptions } from "../kernel.js";
import { KernelProcess } from "../kernel-process.js";
import { CELL_SYNTAX, transformCell } from "./cell-transform.js";
import { stripTypes, TypeScriptCompileError } from "./typescript.js";
import type { HostMessage, WorkerMessage } from "./worker-protocol.js";

export interface NodeKernelOptions extends StartKernelOptions {
  /** argv that starts Node (inside a sandbox: the runtime's loader, its library path and node). */
  nodeCommand: string[];
  workerScript: string;
  /** @default 30000 */
  startTimeoutMs?: number;
}

export class NodeKernel implements Kernel {
  readonly #proc: KernelProcess;
  readonly #typescript: boolean;
  readonly #decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  #nextId = 1;
  #executionCount = 0;
  #current: { id: number; queue: AsyncQueue<KernelEvent> } | undefined;
  readonly #waiters = new Map<number, () => void>();
  #exit: KernelExit | undefined;
  #ready: (() => void) | undefined;

  private constructor(
    readonly language: string,
    opts: NodeKernelOptions,
  ) {
    this.#typescript = language === "typescript";
    this.#proc = new KernelProcess({
      argv: [...opts.nodeCommand, opts.workerScript],
      cwd: opts.cwd,
      env: opts.env,
      extraStdio: ["ipc"],
      onOutput: (name, chunk) => this.#fdOutput(name, chunk),
    });
    this.#proc.child.on("message", (msg: WorkerMessage) => this.#onMessage(msg));
    void this.#proc.exited.then((exit) => {
      this.#exit = exit;
      this.#current?.queue.fail(new KernelExitedError(this.language, exit));
      this.#current = undefined;
      for (const wake of this.#waiters.values()) wake();
      this.#waiters.clear();
    });
  }

  static async start(opts: NodeKernelOptions): Promise<NodeKernel> {
    const kernel = new NodeKernel(opts.language, opts);
    const timeoutMs = opts.startTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        kernel.#ready = resolve;
        timer = setTimeout(() => reject(new Error(`the ${opts.language} context did not start within ${timeoutMs} ms; its output:\n${kernel.#proc.output}`)), timeoutMs);
        void kernel.#proc.exited.then((exit) =>
          reject(new Error(`${new KernelExitedError(opts.language, exit).message} while starting; its output:\n${exit.output}`)),
        );
        opts.signal?.addEventListener("abort", () => reject(opts.signal?.reason), { once: true });
      });
    } catch (error) {
      await kernel.close();
      throw error;
    } finally {
      clearTimeout(timer);
    }
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
    let prepared: string;
    try {
      prepared = await this.#prepare(code);
    } catch (error) {
      if (error instanceof TypeScriptCompileError) {
        yield { type: "error", name: error.name, value: error.message, traceback: error.traceback };
        return;
      }
      if (!(error instanceof BurrowError && error.reason === CELL_SYNTAX)) throw error;
      // Let Node compile the raw cell: its SyntaxError names the line the way users expect.
      prepared = code;
    }
    const id = this.#nextId++;
    const queue = new AsyncQueue<KernelEvent>();
    this.#current = { id, queue };
    try {
      this.#send({ t: "run", id, code: prepared, filename: `cell-${this.#executionCount}.${this.#typescript ? "ts" : "js"}`, silent });
      yield* queue;
    } finally {
      if (this.#current?.id === id) this.#current = undefined;
    }
  }

  interrupt(): void {
    // The worker turns SIGINT into an interruption of the running cell; processes the cell started get it too.
    this.#proc.signalGroup("SIGINT");
  }

  setEnv(vars: Record<string, string>): Promise<void> {
    return this.#envOp("set", vars);
  }

  pushEnv(vars: Record<string, string>): Promise<void> {
    return this.#envOp("push", vars);
  }

  popEnv(): Promise<void> {
    return this.#envOp("pop");
  }

  async close(): Promise<void> {
    await this.#proc.kill();
  }

  async #prepare(code: string): Promise<string> {
    const js = this.#typescript ? await stripTypes(code) : code;
    return transformCell(js).code;
  }

  async #envOp(op: "set" | "push" | "pop", vars?: Record<string, string>): Promise<void> {
    if (this.#exit) throw new KernelExitedError(this.language, this.#exit);
    const id = this.#nextId++;
    await new Promise<void>((resolve) => {
      this.#waiters.set(id, resolve);
      this.#send({ t: "env", id, op, ...(vars ? { vars } : {}) });
    });
  }

  #send(msg: HostMessage): void {
    if (this.#proc.ended || !this.#proc.child.connected) return;
    this.#proc.child.send(msg, (error) => {
      if (error) this.#proc.appendOutput(`\nIPC send failed: ${error.message}`);
    });
  }

  #onMessage(msg: WorkerMessage): void {
    if (msg.t === "ready") {
      this.#ready?.();
      this.#ready = undefined;
      return;
    }
    if (msg.t === "done") {
      const waiter = this.#waiters.get(msg.id);
      if (waiter) {
        this.#waiters.delete(msg.id);
        waiter();
        return;
      }
    }
    const run = this.#current;
    if (!run || run.id !== msg.id) return;
    switch (msg.t) {
      case "out":
        run.queue.push({ type: "stream", name: msg.name, text: msg.text, timestamp: new Date().toISOString() });
        return;
      case "result":
        run.queue.push({ type: "display", data: msg.data, isMain: true });
        return;
      case "error":
        run.queue.push({ type: "error", name: msg.name, value: msg.value, traceback: msg.traceback });
        return;
      case "done":
        run.queue.end();
        return;
    }
  }

  /** Bytes written to the worker's real stdout/stderr (by processes a cell started) belong to the running cell. */
  #fdOutput(name: "stdout" | "stderr", chunk: Buffer): void {
    const text = this.#decoders[name].write(chunk);
    if (!text) return;
    if (this.#current) this.#current.queue.push({ type: "stream", name, text, timestamp: new Date().toISOString() });
    else this.#proc.appendOutput(text);
  }
}
