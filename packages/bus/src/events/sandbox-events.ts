import type { SandboxEventFilter } from "@burrow/protocol";
import { decodeToken, encodeToken } from "../subject.js";
import type { Bus, BusMsg, PubAck } from "../types.js";
import { sandboxEventStreamLimits, type SandboxEventStreamLimits } from "./event-stream-limits.js";

/**
 * Sandbox events on subjects `sbx.<templateId>.<sandboxId>.<category>.<type>`, each id escaped into one token.
 * Address by sandbox with `sbx.*.<sandboxId>.>`, by template with `sbx.<templateId>.>`, by kind with
 * `sbx.*.*.fs.write`. Metadata cannot live in a subject (unbounded keys); it travels in the payload and in
 * `burrow-meta-<key>` headers, and `matchesSandboxEvent` filters on it after the subject match.
 */
export const SANDBOX_EVENT_STREAM = "BURROW_SANDBOX_EVENTS";
export const SANDBOX_EVENT_SUBJECTS = ["sbx.>"];

/**
 * `pause_converted`: a memory pause became a filesystem pause on its own (its age, or a host restart).
 * `lost`: the sandbox's cluster node went down; `recovered`: that node came back with it; `moved`: another node
 * took over the sandbox (filesystem-paused) from a lost or drained node (`from`, `to`).
 * `checkpoint_created`, `rolled_back`, `checkpoint_deleted`: checkpoint trees (`checkpointId`, `parentId`).
 */
export type LifecycleEventType =
  | "created" | "paused" | "resumed" | "snapshotted" | "forked" | "timed_out" | "killed" | "pause_converted"
  | "lost" | "recovered" | "moved" | "checkpoint_created" | "rolled_back" | "checkpoint_deleted";
export type ProcessEventType = "started" | "output" | "exited";
/** `overflow`: changes were dropped to keep a flood bounded; `dropped` says how many, `path` is the latest of them. */
export type FilesystemEventType = "create" | "write" | "remove" | "rename" | "chmod" | "overflow";

interface EventBase {
  sandboxId: string;
  templateId: string;
  metadata?: Record<string, string>;
  /** Unix ms; set by publishSandboxEvent when absent. */
  atMs?: number;
}

export interface LifecycleEvent extends EventBase {
  category: "lifecycle";
  type: LifecycleEventType;
  /** snapshotted: the new snapshot/checkpoint id. */
  snapshotId?: string;
  /** forked: ids of the new sandboxes. */
  children?: string[];
  /** forked/resumed from this sandbox or snapshot; checkpoint_created: the checkpoint it descends from. */
  parentId?: string;
  /** checkpoint_created/checkpoint_deleted: that checkpoint; rolled_back: the one the sandbox was rolled back to. */
  checkpointId?: string;
  /**
   * Why, when the control plane knows: killed/timed_out `api`, `timeout`, `crashed`, `lost`, `orchestrator`;
   * paused `api` or `timeout` (an auto-pause); resumed `api` (connect) or `auto_resume` (traffic);
   * pause_converted `age` or `host_restart`.
   */
  reason?: string;
  /**
   * lost (reported by another node of a cluster than the sandbox's): its team's id; null: the default team of the
   * node that had it. Absent when unknown.
   */
  teamId?: string | null;
  /** moved: the node the sandbox was on and the node that has it now. */
  from?: string;
  to?: string;
  /** paused, pause_converted: how the sandbox is paused now (`memory`: frozen; `filesystem`: only its files kept). */
  pauseKind?: "memory" | "filesystem";
  /**
   * created: the network enforced from its start, E2B's names: the internet switch, allowOut/denyOut (empty: no
   * rules) and, when it has a network config, allowPublicTraffic and maskRequestHost.
   */
  network?: {
    allowInternetAccess: boolean;
    allowOut: string[];
    denyOut: string[];
    allowPublicTraffic?: boolean;
    maskRequestHost?: string;
  };
}

export interface ProcessEvent extends EventBase {
  category: "proc";
  type: ProcessEventType;
  pid: number;
  /** started: the command line. */
  cmd?: string;
  /** output (only published when the process was started with output events on). */
  stream?: "stdout" | "stderr" | "pty";
  /** output: base64 of the chunk (output within a short window is merged into one event). */
  dataBase64?: string;
  /** output: bytes of this stream left out just before this chunk, to keep a fast writer's events bounded. */
  droppedBytes?: number;
  /** exited: the exit code (signal deaths are 128 + signal, as shells report). */
  exitCode?: number;
  error?: string;
}

export interface FilesystemEvent extends EventBase {
  category: "fs";
  type: FilesystemEventType;
  path: string;
  /** rename: the previous path. */
  oldPath?: string;
  /** chmod: the new mode. */
  mode?: number;
  /** Changes of this type to this path merged into this one event (absent when 1). */
  count?: number;
  /** overflow: changes not published one by one (counted before merging). */
  dropped?: number;
  /** overflow: `dropped` by type. */
  droppedByType?: Partial<Record<Exclude<FilesystemEventType, "overflow">, number>>;
  /** overflow: when the first dropped change happened (Unix ms); `atMs` is the last. */
  sinceMs?: number;
}

/**
 * A code run by the sandbox's execution server (a trigger or task with `code`): `started`, then `stdout`/`stderr`
 * (merged and bounded like process output), one `result` per result, `error` when the code raised, and always `end`.
 */
export type CodeEventType = "started" | "stdout" | "stderr" | "result" | "error" | "end";

export interface CodeEvent extends EventBase {
  category: "code";
  type: CodeEventType;
  /** The run every event of it carries: the task id when it runs as a task (a trigger's runs do). */
  runId: string;
  /** started: the language (normalised: python, javascript, typescript, bash, r). */
  language?: string;
  /** stdout/stderr: the text (output within a short window is merged into one event). */
  text?: string;
  /** stdout/stderr: bytes of this stream left out just before this text, to keep a fast writer's events bounded. */
  droppedBytes?: number;
  /**
   * result: one result as the execution server streams it (E2B's formats: text, html, markdown, svg, png, jpeg, pdf,
   * latex, json, javascript, data, chart, extra; is_main_result).
   */
  result?: Record<string, unknown>;
  /** result: formats left out because the event would have been too large (fetch them with runCode instead). */
  omitted?: string[];
  /** error: the exception (as E2B names it: name, value, traceback). */
  name?: string;
  value?: string;
  traceback?: string;
  /** end: the kernel's execution count after the run. */
  executionCount?: number;
  /** end: whether the run finished without an error. */
  ok?: boolean;
  /** end: why the run itself failed (timed out, execution server unreachable), beyond an error the code raised. */
  error?: string;
}

export type SandboxEvent = LifecycleEvent | ProcessEvent | FilesystemEvent | CodeEvent;
export type SandboxEventCategory = SandboxEvent["category"];

export function sandboxEventSubject(e: Pick<SandboxEvent, "templateId" | "sandboxId" | "category" | "type">): string {
  return `sbx.${encodeToken(e.templateId)}.${encodeToken(e.sandboxId)}.${e.category}.${e.type}`;
}

export type { SandboxEventFilter };

/** The narrowest subject pattern covering a filter (metadata and path are checked afterwards). */
export function sandboxEventPattern(f: SandboxEventFilter): string {
  const t = (v: string | undefined) => (v === undefined ? "*" : encodeToken(v));
  if (f.category === undefined && f.type === undefined) return `sbx.${t(f.templateId)}.${t(f.sandboxId)}.>`;
  return `sbx.${t(f.templateId)}.${t(f.sandboxId)}.${f.category ?? "*"}.${f.type ?? "*"}`;
}

export function matchesSandboxEvent(f: SandboxEventFilter, e: SandboxEvent): boolean {
  if (f.sandboxId !== undefined && f.sandboxId !== e.sandboxId) return false;
  if (f.templateId !== undefined && f.templateId !== e.templateId) return false;
  if (f.category !== undefined && f.category !== e.category) return false;
  if (f.type !== undefined && f.type !== e.type) return false;
  if (f.metadata) for (const [k, v] of Object.entries(f.metadata)) if (e.metadata?.[k] !== v) return false;
  if (f.pathPrefix !== undefined && (e.category !== "fs" || !e.path.startsWith(f.pathPrefix))) return false;
  return true;
}

/** Parses a subject back into its parts; undefined for subjects outside the scheme. */
export function parseSandboxEventSubject(subject: string): { templateId: string; sandboxId: string; category: string; type: string } | undefined {
  const t = subject.split(".");
  if (t.length !== 5 || t[0] !== "sbx") return undefined;
  return { templateId: decodeToken(t[1]!), sandboxId: decodeToken(t[2]!), category: t[3]!, type: t[4]! };
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeSandboxEvent(e: SandboxEvent): Uint8Array {
  return enc.encode(JSON.stringify(e));
}

export function decodeSandboxEvent(m: Pick<BusMsg, "data">): SandboxEvent {
  return JSON.parse(dec.decode(m.data)) as SandboxEvent;
}

/** Creates (or updates) the stream that keeps sandbox events for durable consumers such as triggers. */
export async function ensureSandboxEventStream(bus: Bus, opts: SandboxEventStreamLimits = {}): Promise<void> {
  const limits = sandboxEventStreamLimits(opts);
  await bus.ensureStream({ name: SANDBOX_EVENT_STREAM, subjects: SANDBOX_EVENT_SUBJECTS, retention: "limits", ...limits });
}

/**
 * Publishes one sandbox event. Durable by default (the event stream must exist): a trigger that is down when a file
 * is written still sees the write. Process output is usually published with `durable: false`.
 */
export async function publishSandboxEvent(bus: Bus, event: SandboxEvent, opts: { durable?: boolean; msgId?: string; signal?: AbortSignal } = {}): Promise<PubAck | undefined> {
  const e = { ...event, atMs: event.atMs ?? Date.now() };
  const headers: Record<string, string> = { "content-type": "application/json", "burrow-event": `${e.category}.${e.type}` };
  for (const [k, v] of Object.entries(e.metadata ?? {})) headers[`burrow-meta-${k.toLowerCase()}`] = v;
  const subject = sandboxEventSubject(e);
  if (opts.durable === false) {
    await bus.publish(subject, encodeSandboxEvent(e), { headers });
    return undefined;
  }
  return bus.publishDurable(subject, encodeSandboxEvent(e), { headers, msgId: opts.msgId, signal: opts.signal });
}

/** Live sandbox events matching a filter (at-most-once; use a durable consumer on the event stream to miss none). */
export async function* subscribeSandboxEvents(bus: Bus, f: SandboxEventFilter, opts: { signal?: AbortSignal } = {}): AsyncIterable<SandboxEvent> {
  const sub = bus.subscribe(sandboxEventPattern(f), { signal: opts.signal });
  try {
    for await (const m of sub) {
      let e: SandboxEvent;
      try {
        e = decodeSandboxEvent(m);
      } catch {
        continue;
      }
      if (matchesSandboxEvent(f, e)) yield e;
    }
  } finally {
    await sub.close();
  }
}
