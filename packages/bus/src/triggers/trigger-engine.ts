import { BurrowError, Code } from "@burrow/protocol";
import {
  SANDBOX_EVENT_STREAM, decodeSandboxEvent, ensureSandboxEventStream, matchesSandboxEvent, sandboxEventPattern,
  type SandboxEvent, type SandboxEventFilter,
} from "../events/sandbox-events.js";
import { durableName } from "../envelope/routes.js";
import type { Bus, Consumer } from "../types.js";
import { shellQuote, type CodeSpec, type ProcessSettings, type RunTarget, type TerminalSettings } from "./sandbox-runner.js";
import type { TaskService } from "./task-service.js";
import type { SandboxEventStreamLimits } from "../events/event-stream-limits.js";

export interface TriggerRule {
  /** Stable id; the rule's durable consumer is named after it, so a restarted engine resumes where it stopped. */
  id: string;
  on: SandboxEventFilter;
  /** "source": the sandbox the event came from. */
  in: "source" | RunTarget;
  /**
   * Command to run; a string may use {{sandboxId}}, {{templateId}}, {{type}}, {{path}}, {{oldPath}}, each replaced
   * by the shell-quoted value.
   */
  cmd?: string | ((e: SandboxEvent) => string);
  /** Code to run; the event reaches it as per-run env vars (see eventEnvVars). */
  code?: CodeSpec | ((e: SandboxEvent) => CodeSpec);
  process?: ProcessSettings;
  terminal?: TerminalSettings;
  category?: string;
  priority?: number;
  maxAttempts?: number;
}

export interface TriggerEngineOptions {
  bus: Bus;
  tasks: TaskService;
  rules: TriggerRule[];
  /** "new": only events after the rule was first started. @default "new" */
  deliverPolicy?: "all" | "new";
  /** Limits of the sandbox event stream, which the engine ensures: pass the ones the rest of the process uses. */
  eventStream?: SandboxEventStreamLimits;
}

export function renderCommand(template: string, e: SandboxEvent): string {
  const values: Record<string, string | undefined> = {
    sandboxId: e.sandboxId,
    templateId: e.templateId,
    type: e.type,
    path: e.category === "fs" ? e.path : undefined,
    oldPath: e.category === "fs" ? e.oldPath : undefined,
  };
  return template.replace(/\{\{(\w+)\}\}/g, (_, k: string) => shellQuote(values[k] ?? ""));
}

/**
 * The event a code rule fired on, as env vars of its run (code has no placeholders: quoting differs per language):
 * BURROW_EVENT (`<category>.<type>`), BURROW_EVENT_SANDBOX_ID, BURROW_EVENT_TEMPLATE_ID, and for fs events
 * BURROW_EVENT_PATH and BURROW_EVENT_OLD_PATH. The rule's own process.env wins over them.
 */
export function eventEnvVars(e: SandboxEvent): Record<string, string> {
  return {
    BURROW_EVENT: `${e.category}.${e.type}`,
    BURROW_EVENT_SANDBOX_ID: e.sandboxId,
    BURROW_EVENT_TEMPLATE_ID: e.templateId,
    ...(e.category === "fs" ? { BURROW_EVENT_PATH: e.path, ...(e.oldPath !== undefined ? { BURROW_EVENT_OLD_PATH: e.oldPath } : {}) } : {}),
  };
}

/**
 * Turns sandbox events into tasks. Each rule reads the event stream through its own durable consumer, so no event
 * is missed while the engine is down; the task id is derived from the event's stream sequence, so an event
 * redelivered after a crash does not start its command twice.
 */
export class TriggerEngine {
  private readonly stop = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly consumers: Consumer[] = [];
  fired = 0;

  private constructor(private readonly o: TriggerEngineOptions) {}

  static async start(o: TriggerEngineOptions): Promise<TriggerEngine> {
    const ids = new Set<string>();
    for (const r of o.rules) {
      if (ids.has(r.id)) throw new BurrowError(Code.InvalidArgument, `duplicate rule id ${r.id}`);
      ids.add(r.id);
      if ((r.cmd === undefined) === (r.code === undefined)) throw new BurrowError(Code.InvalidArgument, `rule ${r.id} needs exactly one of cmd and code`);
    }
    await ensureSandboxEventStream(o.bus, o.eventStream);
    const eng = new TriggerEngine(o);
    for (const r of o.rules) {
      const c = await o.bus.consumer(SANDBOX_EVENT_STREAM, {
        durable: durableName("trigger", r.id),
        filterSubject: sandboxEventPattern(r.on),
        deliverPolicy: o.deliverPolicy ?? "new",
        ackWaitMs: 30_000,
      });
      eng.consumers.push(c);
      eng.loops.push(eng.run(r, c));
    }
    return eng;
  }

  private async run(rule: TriggerRule, c: Consumer): Promise<void> {
    while (!this.stop.signal.aborted) {
      const m = await c.next({ timeoutMs: 5000, signal: this.stop.signal }).catch(() => null);
      if (!m) continue;
      let e: SandboxEvent;
      try {
        e = decodeSandboxEvent(m);
      } catch {
        await m.term();
        continue;
      }
      if (!matchesSandboxEvent(rule.on, e)) {
        await m.ack();
        continue;
      }
      const target: RunTarget = rule.in === "source" ? { sandboxId: e.sandboxId } : rule.in;
      const cmd = rule.cmd === undefined ? undefined : typeof rule.cmd === "function" ? rule.cmd(e) : renderCommand(rule.cmd, e);
      const code = rule.code === undefined ? undefined : typeof rule.code === "function" ? rule.code(e) : rule.code;
      const settings = code === undefined ? rule.process : { ...rule.process, env: { ...eventEnvVars(e), ...rule.process?.env } };
      try {
        await this.o.tasks.submit({
          id: `trigger:${rule.id}:${m.seq}`,
          target,
          ...(cmd !== undefined ? { cmd } : {}),
          ...(code !== undefined ? { code } : {}),
          ...(settings ? { process: settings } : {}),
          ...(rule.terminal ? { terminal: rule.terminal } : {}),
          category: rule.category ?? `trigger.${rule.id}`,
          ...(rule.priority !== undefined ? { priority: rule.priority } : {}),
          ...(rule.maxAttempts !== undefined ? { maxAttempts: rule.maxAttempts } : {}),
          labels: { rule: rule.id, event: `${e.category}.${e.type}`, sandboxId: e.sandboxId, ...(e.category === "fs" ? { path: e.path } : {}) },
        });
        this.fired++;
        await m.ack();
      } catch {
        await m.nak(1000).catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    this.stop.abort();
    await Promise.allSettled(this.loops);
    for (const c of this.consumers) await c.close();
  }
}
