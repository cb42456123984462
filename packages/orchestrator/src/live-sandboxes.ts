// The sandboxes this orchestrator runs for the control plane (created by it or re-adopted after a restart; pooled
// ones belong to their pools until claimed), what each was started from, and who is told when one ends.
import type { Logger } from "./logger.js";
import type { SandboxExitReason, SandboxLifecycleEvent, SandboxRecord } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";
import type { TemplateRuntime } from "./templates/template-store.js";

/** What a sandbox was started from, for snapshots and forks (kept in memory: env vars may hold secrets). */
export interface LaunchSource {
  layers: string[];
  runtime?: TemplateRuntime | undefined;
  envVars: Record<string, string>;
}

export type ExitListener = (sandboxId: string, reason: SandboxExitReason) => void;
export type LifecycleListener = (event: SandboxLifecycleEvent) => void;

/** Lifecycle events kept for the first listener (those of the start come before anyone can subscribe). */
const MAX_UNHEARD_EVENTS = 10_000;

export class LiveSandboxes {
  private readonly sandboxes = new Map<string, HostedSandbox>();
  /** Layers, runtime and env vars each sandbox created by this process started with. */
  private readonly sources = new Map<string, LaunchSource>();
  private readonly exitListeners = new Set<ExitListener>();
  private readonly lifecycleListeners = new Set<LifecycleListener>();
  /** Events emitted while nobody listened, handed to the first listener. */
  private unheard: SandboxLifecycleEvent[] = [];

  constructor(private readonly logger: Logger) {}

  get(sandboxId: string): HostedSandbox | undefined {
    return this.sandboxes.get(sandboxId);
  }

  has(sandboxId: string): boolean {
    return this.sandboxes.has(sandboxId);
  }

  /** The live sandboxes by id; removing one while iterating is allowed. */
  entries(): IterableIterator<[string, HostedSandbox]> {
    return this.sandboxes.entries();
  }

  ids(): string[] {
    return [...this.sandboxes.keys()];
  }

  list(): HostedSandbox[] {
    return [...this.sandboxes.values()];
  }

  /** A sandbox handed to the control plane; `source` defaults to what its record keeps for a cold boot. */
  add(sandbox: HostedSandbox, source?: LaunchSource): void {
    this.sandboxes.set(sandbox.record.sandboxId, sandbox);
    const boot = sandbox.record.boot;
    const known = source ?? (boot && { layers: [...boot.layers], runtime: boot.runtime, envVars: { ...boot.envVars } });
    if (known) this.sources.set(sandbox.record.sandboxId, known);
  }

  source(sandboxId: string): LaunchSource | undefined {
    return this.sources.get(sandboxId);
  }

  /** The sandbox is ending (killed, or its init exited): from now on it is unknown. */
  delete(sandboxId: string): void {
    this.sandboxes.delete(sandboxId);
    this.sources.delete(sandboxId);
  }

  /** Whether a live sandbox started from this template (a deleted template's layers stay while one does). */
  usesTemplate(templateId: string): boolean {
    for (const sandbox of this.sandboxes.values()) if (sandbox.record.templateId === templateId) return true;
    return false;
  }

  onExit(listener: ExitListener): () => void {
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  onLifecycleEvent(listener: LifecycleListener): () => void {
    this.lifecycleListeners.add(listener);
    const unheard = this.unheard;
    this.unheard = [];
    for (const event of unheard) this.tell(listener, event);
    return () => this.lifecycleListeners.delete(listener);
  }

  emitLifecycleEvent(event: SandboxLifecycleEvent): void {
    if (this.lifecycleListeners.size === 0) {
      if (this.unheard.length < MAX_UNHEARD_EVENTS) this.unheard.push(event);
      return;
    }
    for (const listener of this.lifecycleListeners) this.tell(listener, event);
  }

  private tell(listener: LifecycleListener, event: SandboxLifecycleEvent): void {
    try {
      listener(event);
    } catch (error) {
      this.logger.error({ err: error }, "sandbox lifecycle listener threw");
    }
  }

  emitExit(sandboxId: string, reason: SandboxExitReason): void {
    for (const listener of this.exitListeners) {
      try {
        listener(sandboxId, reason);
      } catch (error) {
        this.logger.error({ err: error }, "sandbox exit listener threw");
      }
    }
  }
}

/** A hosted sandbox as the control plane sees it. */
export function toRecord(sandbox: HostedSandbox): SandboxRecord {
  const { record } = sandbox;
  return {
    sandboxId: record.sandboxId,
    templateId: record.templateId,
    address: record.ip,
    limits: { ...record.limits },
    allowInternetAccess: record.allowInternetAccess,
    startedAt: new Date(record.startedAt),
    state: record.state ?? "running",
    ...(record.state === "paused" ? { pause: { kind: record.pause?.kind ?? "memory", since: new Date(record.pause?.since ?? record.startedAt) } } : {}),
    ...(record.bootId === undefined ? {} : { bootId: record.bootId }),
    ...(record.volumes?.length ? { volumeMounts: record.volumes.map((v) => ({ ...v })) } : {}),
  };
}
