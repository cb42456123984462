// A Jupyter kernel process (ipykernel for python, or any installed kernelspec) spoken to directly over ZeroMQ:
// no Jupyter server in between. Shell (DEALER) carries requests, IOPub (SUB) carries everything a run produces;
// a run ends when the kernel reports itself idle for that request. Sockets are ipc:// files in a private
// directory, so nothing listens on the network.
import { randomBytes, randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Dealer, Subscriber } from "zeromq";
import { BurrowError } from "@burrow/protocol/errors";
import { AsyncQueue } from "../../async-queue.js";
import { KernelExitedError, type KernelExit } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { ExecuteOptions, Kernel, KernelEvent, StartKernelOptions } from "../kernel.js";
import { KernelProcess } from "../kernel-process.js";
import type { KernelSpec } from "./kernelspec.js";
import { BAD_KERNEL_MESSAGE, MessageCodec, type JupyterMessage } from "./wire.js";

/** Code a language's kernel runs (silently) to change its environment; values arrive as a JSON object literal. */
export interface EnvSnippets {
  set(json: string): string;
  push(json: string): string;
  pop(): string;
}

export interface JupyterKernelOptions extends StartKernelOptions {
  spec: KernelSpec;
  /** Private (0700) directory for the connection file and the ipc sockets. */
  runDir: string;
  extraArgs?: string[];
  extraEnv?: Record<string, string>;
  envSnippets?: EnvSnippets | undefined;
  /** @default 60000 */
  startTimeoutMs?: number;
  logger: Logger;
}

const PROBE_INTERVAL_MS = 500;

/**
 * A run ends when both of its ends have arrived: IOPub's idle status (after every output) and shell's
 * execute_reply (which says whether the code ran at all). The two sockets are not ordered with each other.
 */
interface Run {
  queue: AsyncQueue<KernelEvent>;
  silent: boolean;
  idle: boolean;
  replied: boolean;
}

interface Probe {
  ids: Set<string>;
  shellSeen: boolean;
  iopubSeen: boolean;
  ready: () => void;
}

export class JupyterKernel implements Kernel {
  readonly #proc: KernelProcess;
  readonly #codec: MessageCodec;
  readonly #shell: Dealer;
  readonly #iopub: Subscriber;
  readonly #runs = new Map<string, Run>();
  readonly #snippets: EnvSnippets | undefined;
  readonly #logger: Logger;
  #probe: Probe | undefined;
  #exit: KernelExit | undefined;

  private constructor(
    readonly language: string,
    proc: KernelProcess,
    codec: MessageCodec,
    shell: Dealer,
    iopub: Subscriber,
    snippets: EnvSnippets | undefined,
    logger: Logger,
  ) {
    this.#proc = proc;
    this.#codec = codec;
    this.#shell = shell;
    this.#iopub = iopub;
    this.#snippets = snippets;
    this.#logger = logger;
    void this.#pump(this.#iopub, (msg) => this.#onIopub(msg));
    void this.#pump(this.#shell, (msg) => this.#onShell(msg));
    void proc.exited.then((exit) => {
      this.#exit = exit;
      const error = new KernelExitedError(this.language, exit);
      for (const run of this.#runs.values()) run.queue.fail(error);
      this.#runs.clear();
      this.#shell.close();
      this.#iopub.close();
    });
  }

  static async start(opts: JupyterKernelOptions): Promise<JupyterKernel> {
    const id = randomUUID();
    const key = randomBytes(32).toString("hex");
    const base = join(opts.runDir, `k-${id.slice(0, 8)}`);
    const connection = {
      transport: "ipc",
      ip: base,
      shell_port: 1,
      iopub_port: 2,
      stdin_port: 3,
      control_port: 4,
      hb_port: 5,
      key,
      signature_scheme: "hmac-sha256",
      kernel_name: opts.spec.name,
    };
    const connectionFile = `${base}.json`;
    await writeFile(connectionFile, JSON.stringify(connection), { mode: 0o600 });
    const argv = opts.spec.argv.map((a) => a.replace("{connection_file}", connectionFile));
    const [command, ...rest] = argv;
    const proc = new KernelProcess({
      argv: [command ?? "", ...rest, ...(opts.extraArgs ?? [])],
      cwd: opts.cwd,
      env: { ...opts.env, ...opts.spec.env, ...opts.extraEnv },
    });
    const session = randomUUID();
    const codec = new MessageCodec(key, session);
    const shell = new Dealer({ routingId: session, linger: 0 });
    const iopub = new Subscriber({ linger: 0, receiveHighWaterMark: 0 });
    shell.connect(`ipc://${base}-1`);
    iopub.connect(`ipc://${base}-2`);
    iopub.subscribe();
    const kernel = new JupyterKernel(opts.language, proc, codec, shell, iopub, opts.envSnippets, opts.logger);
    try {
      await kernel.#waitReady(opts.startTimeoutMs ?? 60_000, opts.signal);
    } catch (error) {
      await kernel.close();
      throw error;
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
    const msg = this.#codec.create("execute_request", {
      code,
      silent,
      store_history: !silent,
      user_expressions: {},
      allow_stdin: false,
      // Runs are serialised by the context, so nothing is ever queued behind a failing one. With true, ipykernel
      // aborts (without running it) any request that arrives shortly after an error: the next run would be lost.
      stop_on_error: false,
    });
    const queue = new AsyncQueue<KernelEvent>();
    this.#runs.set(msg.header.msg_id, { queue, silent, idle: false, replied: false });
    try {
      await this.#shell.send(this.#codec.encode(msg));
      yield* queue;
    } finally {
      this.#runs.delete(msg.header.msg_id);
    }
  }

  interrupt(): void {
    // ipykernel turns SIGINT into KeyboardInterrupt in the user's code (interrupt_mode "signal").
    this.#proc.signal("SIGINT");
  }

  async setEnv(vars: Record<string, string>): Promise<void> {
    if (this.#snippets && Object.keys(vars).length > 0) await this.#silent(this.#snippets.set(JSON.stringify(vars)));
  }

  async pushEnv(vars: Record<string, string>): Promise<void> {
    if (this.#snippets) await this.#silent(this.#snippets.push(JSON.stringify(vars)));
  }

  async popEnv(): Promise<void> {
    if (this.#snippets) await this.#silent(this.#snippets.pop());
  }

  async close(): Promise<void> {
    await this.#proc.kill();
  }

  async #silent(code: string): Promise<void> {
    for await (const event of this.execute(code, { silent: true })) {
      if (event.type === "error") throw new Error(`${event.name}: ${event.value}`);
    }
  }

  async #pump(socket: Dealer | Subscriber, handle: (msg: JupyterMessage) => void): Promise<void> {
    try {
      for await (const frames of socket) {
        let msg: JupyterMessage;
        try {
          msg = this.#codec.decode(frames);
        } catch (error) {
          if ((error instanceof BurrowError && error.reason === BAD_KERNEL_MESSAGE) || error instanceof SyntaxError) {
            this.#logger.warn("dropped a kernel message", { language: this.language, err: error });
            continue;
          }
          throw error;
        }
        handle(msg);
      }
    } catch (error) {
      // Closing the socket (kernel gone, close()) ends the iteration with an error: nothing to report then.
      if (!this.#exit && !this.#proc.ended) this.#logger.error("kernel socket failed", { language: this.language, err: error });
    }
  }

  #onShell(msg: JupyterMessage): void {
    const parentId = msg.parent_header.msg_id ?? "";
    const probe = this.#probe;
    if (probe && msg.header.msg_type === "kernel_info_reply" && probe.ids.has(parentId)) {
      probe.shellSeen = true;
      if (probe.iopubSeen) probe.ready();
      return;
    }
    const run = this.#runs.get(parentId);
    if (!run || msg.header.msg_type !== "execute_reply") return;
    if (msg.content.status === "aborted") {
      // Never a silent nothing: the client learns its code did not run.
      run.queue.push({ type: "error", name: "ExecutionAborted", value: "the kernel aborted this run without running it", traceback: "" });
    }
    run.replied = true;
    if (run.idle) run.queue.end();
  }

  #onIopub(msg: JupyterMessage): void {
    const parentId = msg.parent_header.msg_id ?? "";
    const probe = this.#probe;
    if (probe && probe.ids.has(parentId)) {
      probe.iopubSeen = true;
      if (probe.shellSeen) probe.ready();
      return;
    }
    const run = this.#runs.get(parentId);
    if (!run) return;
    const c = msg.content;
    switch (msg.header.msg_type) {
      case "status":
        if (c.execution_state !== "idle") return;
        run.idle = true;
        if (run.replied) run.queue.end();
        return;
      case "execute_input":
        if (!run.silent && typeof c.execution_count === "number") run.queue.push({ type: "execution_count", count: c.execution_count });
        return;
      case "stream":
        run.queue.push({
          type: "stream",
          name: c.name === "stderr" ? "stderr" : "stdout",
          text: typeof c.text === "string" ? c.text : "",
          timestamp: msg.header.date ?? new Date().toISOString(),
        });
        return;
      case "execute_result":
      case "display_data":
      case "update_display_data":
        if (typeof c.data === "object" && c.data !== null) {
          run.queue.push({ type: "display", data: c.data as Record<string, unknown>, isMain: msg.header.msg_type === "execute_result" });
        }
        return;
      case "error":
        run.queue.push({
          type: "error",
          name: String(c.ename ?? "Error"),
          value: String(c.evalue ?? ""),
          traceback: Array.isArray(c.traceback) ? c.traceback.map(String).join("\n") : "",
        });
        return;
      default:
        return;
    }
  }

  /**
   * The kernel is ready once a kernel_info request has been answered on shell *and* IOPub has delivered one of
   * its status messages: a SUB socket misses whatever was published before it joined (ZeroMQ's slow joiner),
   * so the probe repeats until both are seen.
   */
  async #waitReady(timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      const probe: Probe = { ids: new Set(), shellSeen: false, iopubSeen: false, ready: resolve };
      this.#probe = probe;
      const send = () => {
        const msg = this.#codec.create("kernel_info_request", {});
        probe.ids.add(msg.header.msg_id);
        this.#shell.send(this.#codec.encode(msg)).catch(() => undefined);
      };
      send();
      timer = setInterval(send, PROBE_INTERVAL_MS);
      deadline = setTimeout(
        () => reject(new Error(`the ${this.language} kernel did not answer within ${timeoutMs} ms; its output:\n${this.#proc.output}`)),
        timeoutMs,
      );
      void this.#proc.exited.then((exit) => reject(new Error(`${new KernelExitedError(this.language, exit).message} while starting; its output:\n${exit.output}`)));
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    try {
      await ready;
    } finally {
      clearInterval(timer);
      clearTimeout(deadline);
      this.#probe = undefined;
    }
  }
}
