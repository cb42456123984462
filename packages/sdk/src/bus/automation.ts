// Types of the trigger, task and watch endpoints (mirrors of the server's JSON; the SDK does not depend on the bus).

import type { CodeSpec, ProcessSettings, RunTarget, SandboxEventFilter, TerminalSettings } from "@burrow/protocol";

export type { CodeSpec, ProcessSettings, RunTarget, SandboxEventFilter, TerminalSettings };

/** A file copied into the target sandbox before the command runs. */
export interface FileInput {
  /** @default (in a trigger) the rule's `on.sandboxId` */
  sandboxId?: string;
  path: string;
  /** @default `path` */
  to?: string;
}

interface RunFields {
  /** Exactly one of cmd and code. In a trigger, cmd may use {{sandboxId}}, {{templateId}}, {{type}}, {{path}}, {{oldPath}}. */
  cmd?: string;
  code?: CodeSpec;
  process?: ProcessSettings;
  terminal?: TerminalSettings;
  category?: string;
  /** 0–9, higher first. */
  priority?: number;
  /** 1–10. @default 3 */
  maxAttempts?: number;
  /** Fresh sandboxes only: keep it running afterwards. */
  keepSandbox?: boolean;
  /** Publish proc.output events with each chunk. */
  outputEvents?: boolean;
  inputs?: FileInput[];
}

export interface TriggerRule extends RunFields {
  /** [A-Za-z0-9_-]{1,48}. @default a random id */
  id?: string;
  on: SandboxEventFilter;
  /** "source": the sandbox the event came from. */
  in: "source" | RunTarget;
}

export interface Trigger extends TriggerRule {
  id: string;
  createdAtMs: number;
  /** Tasks submitted since the server (re)started the rule (get only). */
  fired?: number;
}

export interface TaskSpec extends RunFields {
  /** Submitting the same id twice runs it once. */
  id?: string;
  target: RunTarget;
  labels?: Record<string, string>;
}

export type TaskState = "queued" | "running" | "retrying" | "succeeded" | "dead";

export interface TaskStatus {
  id: string;
  state: TaskState;
  attempt: number;
  spec: TaskSpec;
  result?: {
    exitCode: number;
    stdout: string;
    stderr: string;
    sandboxId?: string;
    /** Code runs: results (formats too large to keep named in `omitted`), the error the code raised, the count. */
    execution?: { results: Array<Record<string, unknown>>; error?: { name: string; value: string; traceback: string }; executionCount?: number };
  };
  error?: string;
  worker?: string;
  updatedAtMs: number;
}

export interface Watch {
  watchId: string;
  sandboxId: string;
  path: string;
  recursive: boolean;
  createdAtMs: number;
}

/** A sandbox event as published on `sbx.<template>.<sandbox>.<category>.<type>`. */
export interface SandboxEvent {
  category: "lifecycle" | "proc" | "fs" | "code";
  type: string;
  sandboxId: string;
  templateId: string;
  metadata?: Record<string, string>;
  atMs: number;
  path?: string;
  pid?: number;
  cmd?: string;
  exitCode?: number;
  stream?: string;
  dataBase64?: string;
  error?: string;
  /** code events: the run they belong to, and what each type carries (see the server's README). */
  runId?: string;
  language?: string;
  text?: string;
  result?: Record<string, unknown>;
  omitted?: string[];
  name?: string;
  value?: string;
  traceback?: string;
  ok?: boolean;
  executionCount?: number;
  /** lifecycle `created`: the network enforced from the start (E2B's allowInternetAccess, allowOut, denyOut…). */
  network?: { allowInternetAccess: boolean; allowOut: string[]; denyOut: string[]; allowPublicTraffic?: boolean; maskRequestHost?: string };
}
