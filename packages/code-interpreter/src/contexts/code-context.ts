// A context: one kernel (python, javascript, typescript, bash…) with its working directory, kept under a stable
// id across restarts and crashes. Runs are serialised. A run that is abandoned (client gone) or over its time
// limit interrupts the kernel; a kernel that does not stop within a grace period is replaced, so a bad run
// never blocks the next one. A kernel that dies (out of memory, os._exit) fails its run with an error that
// names the cause and is started again under the same id.
import { KernelExitedError } from "../errors.js";
import type { Logger } from "../log.js";
import type { Kernel, KernelEvent, StartKernelOptions } from "../kernels/kernel.js";
import { resultItem, type ExecutionItem } from "./execution-item.js";
import { RunQueue } from "./run-queue.js";

export interface ContextInfo {
  id: string;
  language: string;
  cwd: string;
}

export interface CodeContextDeps {
  startKernel: (opts: StartKernelOptions) => Promise<Kernel>;
  /** Environment a new kernel process starts with. */
  baseEnv: () => Record<string, string>;
  /** How long an interrupted run may take to stop before its kernel is replaced. */
  interruptGraceMs: number;
  logger: Logger;
}

export interface RunOptions {
  /** Aborted when the client goes away: the run is interrupted (or never starts if still queued). */
  signal?: AbortSignal | undefined;
  /** Interrupt the run after this long (0 = no limit). Counted from when the run starts, not while queued. */
  timeoutMs?: number | undefined;
  /** Variables for this run only; restored afterwards. */
  envVars?: Record<string, string> | undefined;
  /** The sandbox's variables (envd's), applied once to each kernel before its first run. */
  sandboxEnv?: Record<string, string> | undefined;
}

/** A statement that does nothing, per language, for warmUp(). */
const NO_OP: Record<string, string> = { python: "None", javascript: "undefined", typescript: "undefined", bash: "true" };

/** Kernels that die this soon after starting are not restarted eagerly (a crash loop waits for the next run). */
const EAGER_RESTART_MIN_UPTIME_MS = 2000;

export class CodeContext {
  readonly #deps: CodeContextDeps;
  readonly #queue = new RunQueue();
  #kernel: Promise<Kernel> | undefined;
  #startedAt = 0;
  #envApplied = new WeakSet<Kernel>();
  /** The environment each kernel process started with, so that only what differs from it is sent. */
  readonly #startEnv = new WeakMap<Kernel, Record<string, string>>();
  /** Why the server stopped a kernel (restart, removal, stuck run), for the error its run ends with. */
  readonly #stopReasons = new WeakMap<Kernel, string>();
  #current: Kernel | undefined;
  #closed = false;

  constructor(
    readonly id: string,
    readonly language: string,
    readonly cwd: string,
    deps: CodeContextDeps,
  ) {
    this.#deps = deps;
  }

  info(): ContextInfo {
    return { id: this.id, language: this.language, cwd: this.cwd };
  }

  /** Start the kernel now (context creation waits for it, so errors surface there). */
  async start(signal?: AbortSignal): Promise<void> {
    await this.#ensureKernel(signal);
  }

  /**
   * Send the kernel a silent no-op, so that a client's first run does not pay for the kernel's first message (its
   * first execute costs a few milliseconds more than the next). Silent: no execution count, no result, no state.
   */
  async warmUp(): Promise<void> {
    const noOp = NO_OP[this.language];
    if (noOp === undefined) return;
    const release = await this.#queue.acquire();
    try {
      const kernel = await this.#ensureKernel();
      for await (const event of kernel.execute(noOp, { silent: true })) void event;
    } finally {
      release();
    }
  }

  async *run(code: string, opts: RunOptions = {}): AsyncIterable<ExecutionItem> {
    const release = await this.#queue.acquire();
    try {
      if (opts.signal?.aborted) return;
      if (this.#closed) {
        yield { type: "error", name: "ContextNotFound", value: `context ${this.id} was removed`, traceback: "" };
        return;
      }
      let kernel: Kernel;
      try {
        kernel = await this.#ensureKernel();
        await this.#prepareEnv(kernel, opts);
      } catch (error) {
        yield { type: "error", name: "KernelStartError", value: (error as Error).message, traceback: "" };
        return;
      }
      yield* this.#execute(kernel, code, opts);
      if (opts.envVars && Object.keys(opts.envVars).length > 0 && !this.#isGone(kernel)) {
        await kernel.popEnv().catch((error: unknown) => this.#deps.logger.warn("restoring env vars failed", { context: this.id, err: error }));
      }
    } finally {
      release();
    }
  }

  /** Same id, fresh kernel: state is gone; a run in progress ends with an error saying so. */
  async restart(signal?: AbortSignal): Promise<void> {
    await this.#stop("Context was restarted");
    await this.#ensureKernel(signal);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#stop("Context was removed");
  }

  async *#execute(kernel: Kernel, code: string, opts: RunOptions): AsyncIterable<ExecutionItem> {
    let timedOut = false;
    let interrupted = false;
    let errored = false;
    let grace: NodeJS.Timeout | undefined;
    const interrupt = (why: "timeout" | "abort") => {
      if (interrupted) return;
      interrupted = true;
      timedOut = why === "timeout";
      kernel.interrupt();
      grace = setTimeout(() => {
        this.#deps.logger.warn("run did not stop after an interrupt; replacing its kernel", { context: this.id });
        const why = timedOut ? "the run timed out" : "the run's client went away";
        void this.#stop(`${why} and the kernel did not stop when interrupted: the context was restarted`).then(() => this.#restartInBackground());
      }, this.#deps.interruptGraceMs);
    };
    const onAbort = () => interrupt("abort");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = opts.timeoutMs ? setTimeout(() => interrupt("timeout"), opts.timeoutMs) : undefined;
    try {
      for await (const event of kernel.execute(code)) {
        // The interrupt's own error (KeyboardInterrupt…) is replaced by the timeout error below.
        if (event.type === "error" && (timedOut || errored)) continue;
        if (event.type === "error") errored = true;
        yield toItem(event);
      }
    } catch (error) {
      if (!(error instanceof KernelExitedError)) throw error;
      if (timedOut) {
        // reported below
      } else if (error.exit.byServer) {
        yield { type: "error", name: "ContextRestarting", value: this.#stopReasons.get(kernel) ?? "Context was restarted", traceback: "" };
      } else {
        yield {
          type: "error",
          name: error.exit.oomKilled ? "OutOfMemoryError" : "KernelDiedError",
          value: `${error.message}; the context restarts under the same id and its state is lost`,
          traceback: error.exit.output.trim(),
        };
      }
    } finally {
      clearTimeout(timer);
      clearTimeout(grace);
      opts.signal?.removeEventListener("abort", onAbort);
    }
    if (timedOut) {
      const replaced = this.#isGone(kernel);
      yield {
        type: "error",
        name: "TimeoutError",
        value: `Execution timed out after ${opts.timeoutMs} ms: ${replaced ? "the kernel did not stop when interrupted and was restarted (its state is lost)" : "the kernel was interrupted"}`,
        traceback: "",
      };
    }
  }

  async #prepareEnv(kernel: Kernel, opts: RunOptions): Promise<void> {
    if (!this.#envApplied.has(kernel)) {
      this.#envApplied.add(kernel);
      // Only what the kernel does not have already: a kernel that started with the sandbox's variables (the
      // template's, when the create set none) needs no round trip before its first run.
      const started = this.#startEnv.get(kernel) ?? {};
      const changed = Object.entries(opts.sandboxEnv ?? {}).filter(([key, value]) => started[key] !== value);
      if (changed.length > 0) await kernel.setEnv(Object.fromEntries(changed));
    }
    if (opts.envVars && Object.keys(opts.envVars).length > 0) await kernel.pushEnv(opts.envVars);
  }

  #isGone(kernel: Kernel): boolean {
    return this.#current !== kernel;
  }

  #ensureKernel(signal?: AbortSignal): Promise<Kernel> {
    if (this.#closed) return Promise.reject(new Error(`context ${this.id} was removed`));
    if (this.#kernel) return this.#kernel;
    const env = this.#deps.baseEnv();
    const starting = this.#deps
      .startKernel({ language: this.language, cwd: this.cwd, env, signal })
      .then((kernel) => {
        this.#startEnv.set(kernel, env);
        this.#current = kernel;
        this.#startedAt = Date.now();
        void kernel.exited.then((exit) => {
          if (this.#current !== kernel) return;
          this.#current = undefined;
          this.#kernel = undefined;
          if (!exit.byServer) {
            this.#deps.logger.warn("kernel exited", { context: this.id, language: this.language, code: exit.code, signal: exit.signal, oom: exit.oomKilled });
            if (Date.now() - this.#startedAt >= EAGER_RESTART_MIN_UPTIME_MS) this.#restartInBackground();
          }
        });
        return kernel;
      });
    this.#kernel = starting;
    starting.catch(() => {
      if (this.#kernel === starting) this.#kernel = undefined;
    });
    return starting;
  }

  #restartInBackground(): void {
    if (this.#closed) return;
    this.#ensureKernel().catch((error: unknown) =>
      this.#deps.logger.error("restarting a kernel failed; the next run tries again", { context: this.id, err: error }),
    );
  }

  async #stop(reason: string): Promise<void> {
    const pending = this.#kernel;
    this.#kernel = undefined;
    const kernel = this.#current ?? (await pending?.catch(() => undefined));
    this.#current = undefined;
    if (!kernel) return;
    this.#stopReasons.set(kernel, reason);
    await kernel.close();
  }
}

function toItem(event: KernelEvent): ExecutionItem {
  switch (event.type) {
    case "execution_count":
      return { type: "number_of_executions", execution_count: event.count };
    case "stream":
      return { type: event.name, text: event.text, timestamp: event.timestamp };
    case "display":
      return resultItem(event.data, event.isMain);
    case "error":
      return { type: "error", name: event.name, value: event.value, traceback: event.traceback };
  }
}
