import { createHash, randomUUID } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol";
import { AsyncQueue } from "../async-queue.js";
import { WorkQueue, type QueueMessage } from "../queue/work-queue.js";
import { sleep } from "../signals.js";
import type { Bus, KV } from "../types.js";
import { codeToCommand, type CodeSpec, type ProcessSettings, type RunResult, type RunTarget, type SandboxRunner, type TerminalSettings } from "./sandbox-runner.js";

export interface TaskSpec {
  /** Stable id: submitting the same id twice runs it once. @default a random UUID */
  id?: string;
  target: RunTarget;
  /** Exactly one of cmd and code. */
  cmd?: string;
  code?: CodeSpec;
  process?: ProcessSettings;
  terminal?: TerminalSettings;
  /** Free-form grouping for dashboards and filters, e.g. "pipeline.clean". */
  category?: string;
  /** 0–9, higher first. @default 0 */
  priority?: number;
  /** Attempts before the task is dead. Capped by the service's maxAttempts. */
  maxAttempts?: number;
  /** Free-form context (e.g. the event that triggered it). */
  labels?: Record<string, string>;
}

export type TaskState = "queued" | "running" | "retrying" | "succeeded" | "dead";

export interface TaskStatus {
  id: string;
  state: TaskState;
  attempt: number;
  spec: TaskSpec;
  result?: RunResult;
  error?: string;
  worker?: string;
  updatedAtMs: number;
}

export interface TaskServiceOptions {
  /** Queue name. @default "tasks" */
  queue?: string;
  /** A worker that stops heartbeating a task for this long loses it to another worker. @default 30000 */
  ackWaitMs?: number;
  /** @default 3 */
  maxAttempts?: number;
  /** Delay before each retry. @default [1000, 5000, 30000] */
  backoffMs?: number[];
  pollMs?: number;
  /**
   * This server's name among the servers sharing the bus (the nodes of a cluster): it also reads a queue of its own,
   * to which other servers hand the tasks only it can run (its sandboxes, or a fresh one placement put here).
   */
  node?: string;
}

const TASK_BUCKET = "burrow_tasks";
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Tasks: commands or code run in sandboxes with retries, backoff, a dead state, and failover between workers. */
/**
 * The queue of one server's own tasks: `<queue>_at_<node>`, or a digest of the node's name where that would be longer
 * than a queue name may be.
 */
export function nodeQueueName(queue: string, node: string): string {
  const name = `${queue}_at_${node}`;
  return /^[A-Za-z0-9_-]{1,57}$/.test(name) ? name : `${queue}_at_${createHash("sha256").update(node).digest("hex").slice(0, 16)}`;
}

export class TaskService {
  readonly #nodeQueues = new Map<string, Promise<WorkQueue>>();

  private constructor(
    private readonly bus: Bus,
    readonly queue: WorkQueue,
    private readonly kv: KV,
    private readonly maxAttempts: number,
    private readonly queueOptions: Omit<Parameters<typeof WorkQueue.open>[1], "name">,
    /** This server's own queue (TaskServiceOptions.node). */
    readonly nodeQueue: WorkQueue | undefined,
  ) {}

  static async open(bus: Bus, o: TaskServiceOptions = {}): Promise<TaskService> {
    const maxAttempts = o.maxAttempts ?? 3;
    const queueOptions = {
      ackWaitMs: o.ackWaitMs ?? 30_000,
      // One spare delivery: the worker writes "dead" and terminates on the last attempt itself.
      maxAttempts: maxAttempts + 1,
      backoffMs: o.backoffMs ?? [1000, 5000, 30_000],
      ...(o.pollMs ? { pollMs: o.pollMs } : {}),
    };
    const name = o.queue ?? "tasks";
    const queue = await WorkQueue.open(bus, { name, ...queueOptions });
    const nodeQueue = o.node !== undefined ? await WorkQueue.open(bus, { name: nodeQueueName(name, o.node), ...queueOptions }) : undefined;
    return new TaskService(bus, queue, await bus.kv(TASK_BUCKET), maxAttempts, queueOptions, nodeQueue);
  }

  /**
   * Hands a task to the server named `node` (its own queue): taken from the shared queue by a server that cannot run
   * it. Its status stays where it is; the msg id makes a second hand-over of the same task a no-op.
   */
  async handTo(node: string, spec: TaskSpec & { id: string }, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const name = nodeQueueName(this.queue.name, node);
    let queue = this.#nodeQueues.get(name);
    if (!queue) {
      queue = WorkQueue.open(this.bus, { name, ...this.queueOptions });
      this.#nodeQueues.set(name, queue);
      queue.catch(() => this.#nodeQueues.delete(name));
    }
    await (await queue).enqueue(enc.encode(JSON.stringify(spec)), { priority: spec.priority ?? 0, msgId: `task:${spec.id}`, signal: opts.signal });
  }

  private statusSubject(id: string): string {
    return `task.${this.queue.name}.${Buffer.from(id).toString("base64url")}.status`;
  }

  private async setStatus(s: TaskStatus): Promise<void> {
    await this.kv.put(this.key(s.id), enc.encode(JSON.stringify(s)));
    await this.bus.publish(this.statusSubject(s.id), enc.encode(JSON.stringify(s)));
  }

  private key(id: string): string {
    return `${this.queue.name}.${Buffer.from(id).toString("base64url")}`;
  }

  async submit(spec: TaskSpec, opts: { signal?: AbortSignal } = {}): Promise<{ id: string; duplicate: boolean }> {
    if ((spec.cmd === undefined) === (spec.code === undefined)) throw new BurrowError(Code.InvalidArgument, "a task has exactly one of cmd and code");
    const id = spec.id ?? randomUUID();
    const s: TaskStatus = { id, state: "queued", attempt: 0, spec: { ...spec, id }, updatedAtMs: Date.now() };
    try {
      await this.kv.create(this.key(id), enc.encode(JSON.stringify(s)));
    } catch (e) {
      if (e instanceof BurrowError && e.code === Code.AlreadyExists) return { id, duplicate: true };
      throw e;
    }
    const ack = await this.queue.enqueue(enc.encode(JSON.stringify(s.spec)), { priority: spec.priority ?? 0, msgId: `task:${id}`, signal: opts.signal });
    return { id, duplicate: ack.duplicate };
  }

  async get(id: string): Promise<TaskStatus | null> {
    const e = await this.kv.get(this.key(id));
    return e ? (JSON.parse(dec.decode(e.value)) as TaskStatus) : null;
  }

  /**
   * The tasks whose id starts with `idPrefix` (a trigger rule's runs are `trigger:<rule id>:<event seq>`), read from
   * the status bucket: every key is listed, so this is for operators' views, not a hot path.
   */
  async list(idPrefix: string, opts: { signal?: AbortSignal } = {}): Promise<TaskStatus[]> {
    const mine = `${this.queue.name}.`;
    const out: TaskStatus[] = [];
    for (const k of await this.kv.keys(opts)) {
      if (!k.startsWith(mine)) continue;
      const id = Buffer.from(k.slice(mine.length), "base64url").toString();
      if (!id.startsWith(idPrefix)) continue;
      const s = await this.get(id);
      if (s) out.push(s);
    }
    return out;
  }

  /** Resolves with the task's final status (succeeded or dead). */
  async wait(id: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TaskStatus> {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? 300_000);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const sub = this.bus.subscribe(this.statusSubject(id), { signal });
    try {
      for (;;) {
        const s = await this.get(id);
        if (s && (s.state === "succeeded" || s.state === "dead")) return s;
        // Status changes are announced; the poll covers one published before we subscribed.
        const it = sub[Symbol.asyncIterator]();
        const r = await Promise.race([it.next(), sleep(500, signal).then(() => undefined)]);
        if (r?.done) throw new BurrowError(timeout.aborted ? Code.DeadlineExceeded : Code.Canceled, `waiting for task ${id}`);
      }
    } catch (e) {
      throw BurrowError.from(e, Code.Canceled);
    } finally {
      await sub.close();
    }
  }

  /** Status changes of a task as they happen. */
  async *watch(id: string, opts: { signal?: AbortSignal } = {}): AsyncIterable<TaskStatus> {
    const sub = this.bus.subscribe(this.statusSubject(id), { signal: opts.signal });
    try {
      for await (const m of sub) {
        const s = JSON.parse(dec.decode(m.data)) as TaskStatus;
        yield s;
        if (s.state === "succeeded" || s.state === "dead") return;
      }
    } finally {
      await sub.close();
    }
  }

  startWorker(runner: SandboxRunner, o: { workerId?: string; concurrency?: number } = {}): TaskWorker {
    return new TaskWorker(this, runner, o.workerId ?? randomUUID(), o.concurrency ?? 1, this.maxAttempts);
  }

  /** @internal used by TaskWorker */
  async record(s: TaskStatus): Promise<void> {
    await this.setStatus(s);
  }
}

/** Runs tasks from the queue. Several workers (in any process) share the queue; a dead worker's task moves on. */
export class TaskWorker {
  private readonly stop = new AbortController();
  private readonly loops: Promise<void>[] = [];
  readonly events = new AsyncQueue<TaskStatus>(10_000);

  constructor(private readonly svc: TaskService, private readonly runner: SandboxRunner, readonly workerId: string, concurrency: number, private readonly maxAttempts: number) {
    for (let i = 0; i < concurrency; i++) this.loops.push(this.loop(svc.queue, true));
    // Tasks other servers handed to this one: run here whatever nodeFor says now (no second hand-over, no ping-pong).
    if (svc.nodeQueue) for (let i = 0; i < concurrency; i++) this.loops.push(this.loop(svc.nodeQueue, false));
  }

  private async loop(queue: WorkQueue, shared: boolean): Promise<void> {
    const c = await queue.consumer();
    try {
      while (!this.stop.signal.aborted) {
        const m = await c.next({ timeoutMs: 5000, signal: this.stop.signal }).catch(() => null);
        if (m) await this.handle(m, shared);
      }
    } finally {
      await c.close();
    }
  }

  private async handle(m: QueueMessage, shared: boolean): Promise<void> {
    const spec = JSON.parse(dec.decode(m.data)) as TaskSpec & { id: string };
    const prev = await this.svc.get(spec.id);
    // A worker that finished but died before acknowledging: the result is recorded, do not run it again.
    if (prev && (prev.state === "succeeded" || prev.state === "dead")) return void (await m.ack());
    const elsewhere = shared ? this.runner.nodeFor?.(spec.target) : undefined;
    if (elsewhere !== undefined) {
      try {
        await this.svc.handTo(elsewhere, spec, { signal: this.stop.signal });
        await m.ack();
      } catch {
        await m.nack({ delayMs: 1000 }).catch(() => undefined);
      }
      return;
    }
    const limit = Math.min(spec.maxAttempts ?? this.maxAttempts, this.maxAttempts);
    const base = { id: spec.id, spec, attempt: m.attempt, worker: this.workerId };
    await this.note({ ...base, state: "running", updatedAtMs: Date.now() });
    // Keep the delivery ours while the command runs.
    const keepAlive = setInterval(() => void m.working().catch(() => undefined), Math.max(100, this.svc.queue.opts.ackWaitMs / 3));
    let result: RunResult | undefined;
    let error: string | undefined;
    let permanent = false;
    try {
      const opts = { ...(spec.process ?? {}), ...(spec.terminal ? { terminal: spec.terminal } : {}), signal: this.stop.signal, taskId: spec.id };
      if (spec.code && this.runner.runCode) result = await this.runner.runCode(spec.target, spec.code, opts);
      else result = await this.runner.runCommand(spec.target, spec.cmd ?? codeToCommand(spec.code!), opts);
      const raised = result.execution?.error;
      if (raised) error = `${raised.name}: ${raised.value}`;
      else if (result.exitCode !== 0) error = `exit code ${result.exitCode}`;
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
      // Input the runner refuses (a language the sandbox lacks, no execution server) fails the same way every time.
      if (e instanceof BurrowError && (e.code === Code.InvalidArgument || e.code === Code.FailedPrecondition)) permanent = true;
    } finally {
      clearInterval(keepAlive);
    }
    if (this.stop.signal.aborted) return; // stopping mid-task: leave it for another worker
    if (!error) {
      await this.note({ ...base, state: "succeeded", ...(result ? { result } : {}), updatedAtMs: Date.now() });
      await m.ack();
    } else if (m.attempt >= limit || permanent) {
      await this.note({ ...base, state: "dead", ...(result ? { result } : {}), error, updatedAtMs: Date.now() });
      await m.term({ error });
    } else {
      await this.note({ ...base, state: "retrying", ...(result ? { result } : {}), error, updatedAtMs: Date.now() });
      await m.nack();
    }
  }

  private async note(s: TaskStatus): Promise<void> {
    await this.svc.record(s);
    this.events.push(s);
  }

  /** Stops taking tasks; a task in progress is abandoned to another worker (its signal is aborted). */
  async close(): Promise<void> {
    this.stop.abort();
    await Promise.allSettled(this.loops);
    this.events.end();
  }
}
