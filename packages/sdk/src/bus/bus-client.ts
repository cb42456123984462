import { fromBody, Http, toBody, type BusClientOptions, type CallOptions, type Payload } from "./http.js";
import { queueAdmin } from "./queue-admin.js";
import { readSse } from "./sse.js";
import type { SandboxEvent, SandboxEventFilter, TaskSpec, TaskStatus, Trigger, TriggerRule, Watch } from "./automation.js";

/** The narrowest subject pattern for a filter (metadata and pathPrefix are checked on each event). */
function eventPattern(f: SandboxEventFilter): string {
  const t = (v: string | undefined) => (v === undefined ? "*" : v.replace(/[.*>%\s]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")));
  if (f.category === undefined && f.type === undefined) return `sbx.${t(f.templateId)}.${t(f.sandboxId)}.>`;
  return `sbx.${t(f.templateId)}.${t(f.sandboxId)}.${f.category ?? "*"}.${f.type ?? "*"}`;
}

function eventMatches(f: SandboxEventFilter, e: SandboxEvent): boolean {
  if (f.sandboxId !== undefined && f.sandboxId !== e.sandboxId) return false;
  if (f.templateId !== undefined && f.templateId !== e.templateId) return false;
  if (f.category !== undefined && f.category !== e.category) return false;
  if (f.type !== undefined && f.type !== e.type) return false;
  if (f.metadata) for (const [k, v] of Object.entries(f.metadata)) if (e.metadata?.[k] !== v) return false;
  if (f.pathPrefix !== undefined && !(e.path ?? "").startsWith(f.pathPrefix)) return false;
  return true;
}

export interface BusMessage {
  subject: string;
  data: Uint8Array;
  /** The payload as text, when it is valid UTF-8. */
  text: string | undefined;
  headers: Record<string, string>;
}

export interface PublishResult {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
}

export interface QueueMessage {
  data: Uint8Array;
  text: string | undefined;
  headers: Record<string, string>;
  priority: number;
  attempt: number;
  msgId: string | null;
  ack(opts?: CallOptions): Promise<void>;
  nack(opts?: CallOptions & { delayMs?: number }): Promise<void>;
}

export interface AgentStatus {
  agentId: string;
  group?: string;
  state: "up" | "down";
  lastSeenMs: number;
}

/** The Burrow bus over its REST/SSE API: `bus`, `queue` and `agent` namespaces. */
export class BusClient {
  private readonly http: Http;

  constructor(opts: BusClientOptions) {
    this.http = new Http(opts);
  }

  readonly bus = {
    /** Publishes; with `durable` or `msgId` the message is stored by the stream covering the subject. */
    publish: async (subject: string, data: Payload, opts: CallOptions & { headers?: Record<string, string>; durable?: boolean; msgId?: string } = {}): Promise<PublishResult> => {
      const r = await this.http.json<PublishResult>("/bus/publish", "POST", {
        subject, ...toBody(data),
        ...(opts.headers ? { headers: opts.headers } : {}),
        ...(opts.durable ? { durable: true } : {}),
        ...(opts.msgId !== undefined ? { msgId: opts.msgId } : {}),
      }, opts);
      return r.body ?? {};
    },

    /**
     * Live messages on a subject pattern (`*` and `>` wildcards). Resolves once the server has subscribed, so
     * messages published after it returns are seen. Iterate it; `break` or the signal ends the stream.
     */
    subscribe: async (pattern: string, opts: CallOptions & { queue?: string } = {}): Promise<AsyncIterable<BusMessage> & { close(): void }> => {
      const ac = new AbortController();
      const signal = opts.signal ? AbortSignal.any([opts.signal, ac.signal]) : ac.signal;
      const q = new URLSearchParams({ subject: pattern, ...(opts.queue ? { queue: opts.queue } : {}) });
      const res = await this.http.fetch(`/bus/subscribe?${q}`, { method: "GET", headers: this.http.headers({ accept: "text/event-stream" }), signal, noTimeout: true });
      const events = readSse(res.body!)[Symbol.asyncIterator]();
      return {
        close: () => ac.abort(),
        [Symbol.asyncIterator]: () => ({
          async next(): Promise<IteratorResult<BusMessage>> {
            for (;;) {
              let r: IteratorResult<{ event: string; data: string }>;
              try {
                r = await events.next();
              } catch (e) {
                if (signal.aborted) return { value: undefined, done: true };
                throw e;
              }
              if (r.done) return { value: undefined, done: true };
              if (r.value.event !== "message") continue;
              const m = JSON.parse(r.value.data) as { subject: string; headers: Record<string, string>; dataBase64: string; data?: string };
              return { value: { subject: m.subject, headers: m.headers, data: fromBody(m), text: m.data }, done: false };
            }
          },
          async return(): Promise<IteratorResult<BusMessage>> {
            ac.abort();
            await events.return?.();
            return { value: undefined, done: true };
          },
        }),
      };
    },
  };

  /** Sandbox events (lifecycle, proc, fs) on their subjects, decoded and filtered. */
  readonly events = {
    /** Live events matching the filter; resolves once subscribed. `close()` or `break` ends it. */
    subscribe: async (filter: SandboxEventFilter, opts: CallOptions = {}): Promise<AsyncIterable<SandboxEvent> & { close(): void }> => {
      const sub = await this.bus.subscribe(eventPattern(filter), opts);
      return {
        close: () => sub.close(),
        async *[Symbol.asyncIterator]() {
          for await (const m of sub) {
            let e: SandboxEvent;
            try {
              e = JSON.parse(m.text ?? "") as SandboxEvent;
            } catch {
              continue;
            }
            if (eventMatches(filter, e)) yield e;
          }
        },
      };
    },
  };

  /** Filesystem watches: the server publishes a sandbox's file changes under a path as `fs` events. */
  readonly watches = {
    /** Resolves once the sandbox's envd watches, so every change after it is published. */
    create: async (sandboxId: string, path: string, opts: CallOptions & { recursive?: boolean; user?: string } = {}): Promise<Watch> => {
      const r = await this.http.json<Watch>(`/sandboxes/${encodeURIComponent(sandboxId)}/watches`, "POST", {
        path, ...(opts.recursive !== undefined ? { recursive: opts.recursive } : {}), ...(opts.user ? { user: opts.user } : {}),
      }, opts);
      return r.body!;
    },
    list: async (sandboxId: string, opts: CallOptions = {}): Promise<Watch[]> =>
      (await this.http.json<Watch[]>(`/sandboxes/${encodeURIComponent(sandboxId)}/watches`, "GET", undefined, opts)).body ?? [],
    delete: async (sandboxId: string, watchId: string, opts: CallOptions = {}): Promise<void> => {
      await this.http.json(`/sandboxes/${encodeURIComponent(sandboxId)}/watches/${encodeURIComponent(watchId)}`, "DELETE", undefined, opts);
    },
  };

  /** Rules "on an event matching X, run a command or code in a sandbox"; persisted by the server. */
  readonly triggers = {
    create: async (rule: TriggerRule, opts: CallOptions = {}): Promise<Trigger> => (await this.http.json<Trigger>("/triggers", "POST", rule, opts)).body!,
    list: async (opts: CallOptions = {}): Promise<Trigger[]> => (await this.http.json<Trigger[]>("/triggers", "GET", undefined, opts)).body ?? [],
    get: async (id: string, opts: CallOptions = {}): Promise<Trigger> => (await this.http.json<Trigger>(`/triggers/${encodeURIComponent(id)}`, "GET", undefined, opts)).body!,
    delete: async (id: string, opts: CallOptions = {}): Promise<void> => {
      await this.http.json(`/triggers/${encodeURIComponent(id)}`, "DELETE", undefined, opts);
    },
  };

  /** Commands or code run in sandboxes with retries (a queue shared by the server's workers). */
  readonly tasks = {
    submit: async (spec: TaskSpec, opts: CallOptions = {}): Promise<{ id: string; duplicate: boolean }> =>
      (await this.http.json<{ id: string; duplicate: boolean }>("/tasks", "POST", spec, opts)).body!,
    get: async (id: string, opts: CallOptions = {}): Promise<TaskStatus> => (await this.http.json<TaskStatus>(`/tasks/${encodeURIComponent(id)}`, "GET", undefined, opts)).body!,
    /** Resolves with the final status (succeeded or dead); rejects when `timeoutMs` (default 300000) passes first. */
    wait: async (id: string, opts: CallOptions & { timeoutMs?: number } = {}): Promise<TaskStatus> => {
      const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`task ${id} did not finish in time`);
        const waitMs = Math.min(left, 25_000);
        const r = await this.http.json<TaskStatus>(`/tasks/${encodeURIComponent(id)}?waitMs=${waitMs}`, "GET", undefined, opts);
        const s = r.body!;
        if (s.state === "succeeded" || s.state === "dead") return s;
      }
    },
  };

  readonly queue = {
    /** Depth and dead letters: list, depth, deadLetters, deadLetter, requeue, requeueAll, drop, dropAll. */
    ...queueAdmin(() => this.http),

    enqueue: async (name: string, data: Payload, opts: CallOptions & { priority?: number; msgId?: string; headers?: Record<string, string> } = {}): Promise<{ seq: number; duplicate: boolean }> => {
      const r = await this.http.json<{ seq: number; duplicate: boolean }>(`/queues/${encodeURIComponent(name)}/messages`, "POST", {
        ...toBody(data),
        ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
        ...(opts.msgId !== undefined ? { msgId: opts.msgId } : {}),
        ...(opts.headers ? { headers: opts.headers } : {}),
      }, opts);
      return r.body!;
    },

    /** One message, waiting up to `timeoutMs` (max 30000); null when none came. */
    next: async (name: string, opts: CallOptions & { timeoutMs?: number } = {}): Promise<QueueMessage | null> => {
      const r = await this.http.json<{ receipt: string; dataBase64: string; data?: string; headers: Record<string, string>; priority: number; attempt: number; msgId: string | null }>(
        `/queues/${encodeURIComponent(name)}/consume`, "POST", { timeoutMs: opts.timeoutMs ?? 10_000 }, opts);
      if (!r.body) return null;
      const b = r.body;
      const base = `/queues/${encodeURIComponent(name)}/messages/${encodeURIComponent(b.receipt)}`;
      return {
        data: fromBody(b), text: b.data, headers: b.headers, priority: b.priority, attempt: b.attempt, msgId: b.msgId,
        ack: async (o = {}) => void (await this.http.json(`${base}/ack`, "POST", undefined, o)),
        nack: async (o = {}) => void (await this.http.json(`${base}/nack`, "POST", o.delayMs === undefined ? {} : { delayMs: o.delayMs }, o)),
      };
    },

    /** Messages as they come, until the signal aborts. Acknowledge each one (or nack it). */
    consume: (name: string, opts: CallOptions & { waitMs?: number } = {}): AsyncIterable<QueueMessage> => {
      const next = this.queue.next;
      return {
        async *[Symbol.asyncIterator]() {
          while (!opts.signal?.aborted) {
            let m: QueueMessage | null;
            try {
              m = await next(name, { timeoutMs: opts.waitMs ?? 10_000, ...(opts.signal ? { signal: opts.signal } : {}) });
            } catch (e) {
              if (opts.signal?.aborted) return;
              throw e;
            }
            if (m) yield m;
          }
        },
      };
    },
  };

  readonly agent = {
    heartbeat: async (agentId: string, opts: CallOptions & { group?: string; meta?: Record<string, string> } = {}): Promise<void> => {
      await this.http.json(`/agents/${encodeURIComponent(agentId)}/heartbeat`, "POST", {
        ...(opts.group ? { group: opts.group } : {}),
        ...(opts.meta ? { meta: opts.meta } : {}),
      }, opts);
    },
    /** Registers a raw 32-byte Ed25519 public key for the agent; returns its key id. */
    registerKey: async (agentId: string, publicKey: Uint8Array, opts: CallOptions = {}): Promise<{ agentId: string; keyId: string }> => {
      const r = await this.http.json<{ agentId: string; keyId: string }>(`/agents/${encodeURIComponent(agentId)}/keys`, "POST", { publicKey: Buffer.from(publicKey).toString("base64") }, opts);
      return r.body!;
    },
    status: async (agentId: string, opts: CallOptions = {}): Promise<AgentStatus> => {
      const r = await this.http.json<AgentStatus>(`/agents/${encodeURIComponent(agentId)}`, "GET", undefined, opts);
      return r.body!;
    },
  };
}
