// Triggers and tasks inside the server: rules persisted in the bus's KV (so they survive a restart and resume from
// their durable consumer's position), one TriggerEngine per rule, a TaskService and a TaskWorker running tasks with
// the server's real SandboxRunner. On a bus other servers share (NATS: the nodes of a cluster), every server runs
// every rule: the rules' KV is read again every few seconds so that a rule made or deleted through another server
// starts or stops here too, and the servers' engines of one rule read through the same durable consumer, which gives
// each event to one of them, so a rule fires once per event however many servers run it.
import { randomBytes, randomUUID } from "node:crypto";
import {
  TaskService, TriggerEngine,
  type Bus, type CodeSpec, type KV, type ProcessSettings, type RunTarget, type SandboxEventFilter, type SandboxEventStreamLimits, type TaskSpec, type TaskStatus, type TaskWorker, type TerminalSettings, type TriggerRule,
} from "@burrow/bus";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import type { FileInput, ServerRunExtensions, ServerSandboxRunner } from "./sandbox-runner.js";

/** A trigger rule as clients send it: JSON only (no functions), plus Burrow's run extensions. */
export interface TriggerRuleInput extends ServerRunExtensions {
  /** [A-Za-z0-9_-]{1,48}. @default a random id */
  id?: string;
  on: SandboxEventFilter;
  /** "source": the sandbox the event came from; `{sandboxId}`; or `{template}` for a fresh sandbox per event. */
  in: "source" | RunTarget;
  /** May use {{sandboxId}}, {{templateId}}, {{type}}, {{path}}, {{oldPath}} (replaced shell-quoted). */
  cmd?: string;
  code?: CodeSpec;
  process?: ProcessSettings;
  terminal?: TerminalSettings;
  category?: string;
  priority?: number;
  maxAttempts?: number;
}

export interface StoredTrigger extends TriggerRuleInput {
  id: string;
  createdAtMs: number;
  /** Names the rule's durable consumer: a rule deleted and re-created with the same id starts afresh. */
  generation: string;
}

/** A task as clients send it, plus Burrow's run extensions (folded into `process` for the runner). */
export interface TaskInput extends TaskSpec, ServerRunExtensions {}

export interface TriggerServiceOptions {
  bus: Bus;
  runner: ServerSandboxRunner;
  logger: Logger;
  /** Tasks run at once by this server. @default 4 */
  concurrency?: number;
  /** Task queue settings. */
  maxAttempts?: number;
  backoffMs?: number[];
  /** Limits of the sandbox event stream every rule's engine ensures; the server's own (config `eventStream`). */
  eventStream?: SandboxEventStreamLimits;
  /**
   * How often the rules are read again to follow other servers' changes; 0: never (a bus only this server uses).
   * @default 2000 on a NATS bus, else 0
   */
  syncMs?: number;
  /**
   * This server's name when other servers share the bus (a node of a cluster): tasks only it can run are handed to its
   * own queue (TaskService's `node`, the runner's `nodeFor`).
   */
  node?: string | undefined;
}

export const TRIGGER_BUCKET = "burrow_triggers";
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Folds the run extensions into process settings (how they reach the runner through the bus's TaskWorker). */
export function withExtensions(process: ProcessSettings | undefined, x: ServerRunExtensions): (ProcessSettings & ServerRunExtensions) | undefined {
  const ext: ServerRunExtensions = {
    ...(x.keepSandbox !== undefined ? { keepSandbox: x.keepSandbox } : {}),
    ...(x.outputEvents !== undefined ? { outputEvents: x.outputEvents } : {}),
    ...(x.inputs !== undefined ? { inputs: x.inputs } : {}),
    ...(x.ownerKeyId !== undefined ? { ownerKeyId: x.ownerKeyId } : {}),
  };
  if (!process && Object.keys(ext).length === 0) return undefined;
  return { ...(process ?? {}), ...ext };
}

function toEngineRule(t: StoredTrigger): TriggerRule {
  const process = withExtensions(t.process, t);
  return {
    id: `${t.id}_${t.generation}`,
    on: t.on,
    in: t.in,
    ...(t.cmd !== undefined ? { cmd: t.cmd } : {}),
    ...(t.code !== undefined ? { code: t.code } : {}),
    ...(process ? { process } : {}),
    ...(t.terminal ? { terminal: t.terminal } : {}),
    category: t.category ?? `trigger.${t.id}`,
    ...(t.priority !== undefined ? { priority: t.priority } : {}),
    ...(t.maxAttempts !== undefined ? { maxAttempts: t.maxAttempts } : {}),
  };
}

export class TriggerService {
  /** Rule id → its engine, and the generation it runs (a rule re-created under the same id is a new one). */
  readonly #engines = new Map<string, { engine: TriggerEngine; generation: string }>();
  /** Starts and stops of engines, one at a time: a sync must not start a second engine beside a create's. */
  #changes: Promise<unknown> = Promise.resolve();
  #syncTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(
    private readonly o: TriggerServiceOptions,
    readonly tasks: TaskService,
    private readonly worker: TaskWorker,
    private readonly kv: KV,
  ) {}

  /** Opens the task queue, starts a worker, and restarts every persisted rule. */
  static async open(o: TriggerServiceOptions): Promise<TriggerService> {
    const tasks = await TaskService.open(o.bus, { maxAttempts: o.maxAttempts ?? 3, backoffMs: o.backoffMs ?? [1000, 5000, 15_000], ...(o.node !== undefined ? { node: o.node } : {}) });
    const kv = await o.bus.kv(TRIGGER_BUCKET);
    const worker = tasks.startWorker(o.runner, { workerId: `server-${process.pid}-${randomUUID().slice(0, 8)}`, concurrency: o.concurrency ?? 4 });
    const svc = new TriggerService(o, tasks, worker, kv);
    await svc.sync();
    const syncMs = o.syncMs ?? (o.bus.kind === "nats" ? 2000 : 0);
    if (syncMs > 0) {
      const tick = () => {
        svc.#syncTimer = setTimeout(() => void svc.sync().finally(() => !svc.#closed && tick()), syncMs);
        svc.#syncTimer.unref();
      };
      tick();
    }
    return svc;
  }

  /** Runs `change` after the ones before it (engine starts and stops never interleave). */
  #serial<T>(change: () => Promise<T>): Promise<T> {
    const next = this.#changes.then(change, change);
    this.#changes = next.catch(() => undefined);
    return next;
  }

  async #start(t: StoredTrigger): Promise<void> {
    // A sync may have started it between the rule's write and its create's turn.
    if (this.#engines.get(t.id)?.generation === t.generation) return;
    const engine = await TriggerEngine.start({ bus: this.o.bus, tasks: this.tasks, rules: [toEngineRule(t)], eventStream: this.o.eventStream });
    if (this.#closed) return void (await engine.close());
    this.#engines.set(t.id, { engine, generation: t.generation });
  }

  async #stop(id: string): Promise<void> {
    const running = this.#engines.get(id);
    this.#engines.delete(id);
    await running?.engine.close();
  }

  /**
   * Runs exactly the stored rules: starts those without an engine here (persisted before a restart, or made through
   * another server), stops those deleted or re-created elsewhere. Never throws: a failure is logged and the next sync
   * tries again.
   */
  sync(): Promise<void> {
    return this.#serial(async () => {
      if (this.#closed) return;
      let stored: StoredTrigger[];
      try {
        stored = await this.list();
      } catch (err) {
        this.o.logger.warn({ err }, "could not read the trigger rules");
        return;
      }
      const wanted = new Map(stored.map((t) => [t.id, t]));
      for (const [id, running] of [...this.#engines]) {
        if (wanted.get(id)?.generation !== running.generation) await this.#stop(id).catch((err: unknown) => this.o.logger.warn({ err, triggerId: id }, "could not stop a trigger"));
      }
      for (const t of stored) {
        if (this.#engines.has(t.id) || this.#closed) continue;
        try {
          await this.#start(t);
        } catch (err) {
          this.o.logger.error({ err, triggerId: t.id }, "could not start a stored trigger");
        }
      }
    });
  }

  /** `owner`: the key of the request that made the rule, whose team owns the sandboxes it creates. */
  async create(input: TriggerRuleInput, owner?: { apiKeyId: number | null }): Promise<StoredTrigger> {
    if (this.#closed) throw new BurrowError(Code.Unavailable, "the server is shutting down");
    const t: StoredTrigger = {
      ...input,
      ...(owner ? { ownerKeyId: owner.apiKeyId } : {}),
      id: input.id ?? randomUUID(),
      createdAtMs: Date.now(),
      generation: randomBytes(4).toString("hex"),
    };
    try {
      await this.kv.create(t.id, enc.encode(JSON.stringify(t)));
    } catch (err) {
      if (err instanceof BurrowError && err.code === Code.AlreadyExists) throw new BurrowError(Code.AlreadyExists, `trigger "${t.id}" already exists`);
      throw err;
    }
    try {
      await this.#serial(() => this.#start(t));
    } catch (err) {
      await this.kv.delete(t.id).catch(() => undefined);
      throw err;
    }
    return t;
  }

  async list(): Promise<StoredTrigger[]> {
    const out = (await this.kv.entries()).map((e) => JSON.parse(dec.decode(e.value)) as StoredTrigger);
    return out.sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  async get(id: string): Promise<StoredTrigger | null> {
    const e = await this.kv.get(id);
    return e ? (JSON.parse(dec.decode(e.value)) as StoredTrigger) : null;
  }

  /** False when there was no such trigger. Tasks it already submitted still run. */
  async delete(id: string): Promise<boolean> {
    const existing = await this.get(id);
    if (!existing) return false;
    await this.kv.delete(id);
    await this.#serial(() => this.#stop(id));
    return true;
  }

  /** How many tasks the rule has submitted since this server started it. */
  fired(id: string): number {
    return this.#engines.get(id)?.engine.fired ?? 0;
  }

  /** `owner`: the key of the request that submitted it, whose team owns a fresh sandbox it runs in. */
  async submitTask(input: TaskInput, owner?: { apiKeyId: number | null }): Promise<{ id: string; duplicate: boolean }> {
    if (this.#closed) throw new BurrowError(Code.Unavailable, "the server is shutting down");
    const { keepSandbox, outputEvents, inputs, ownerKeyId: _fromClient, ...spec } = input;
    const proc = withExtensions(spec.process, {
      ...(keepSandbox !== undefined ? { keepSandbox } : {}),
      ...(outputEvents !== undefined ? { outputEvents } : {}),
      ...(inputs ? { inputs } : {}),
      ...(owner ? { ownerKeyId: owner.apiKeyId } : {}),
    });
    return this.tasks.submit({ ...spec, ...(proc ? { process: proc } : {}) });
  }

  /** The tasks this generation of a rule submitted (its runs), newest event first, at most `limit`. */
  async runs(t: StoredTrigger, limit: number, opts: { signal?: AbortSignal } = {}): Promise<TaskStatus[]> {
    // The engine names each task after its rule id, which carries the generation (toEngineRule).
    const prefix = `trigger:${toEngineRule(t).id}:`;
    const seqOf = (t: TaskStatus) => Number(t.id.slice(prefix.length)) || 0;
    return (await this.tasks.list(prefix, opts)).sort((a, b) => seqOf(b) - seqOf(a)).slice(0, limit);
  }

  getTask(id: string): Promise<TaskStatus | null> {
    return this.tasks.get(id);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#syncTimer);
    await this.#changes;
    const engines = [...this.#engines.values()];
    this.#engines.clear();
    await Promise.allSettled(engines.map((e) => e.engine.close()));
    await this.worker.close();
  }
}

export type { FileInput };
