// The sandboxes this orchestrator runs for the control plane (created by it or re-adopted after a restart; pooled
// ones belong to their pools until claimed), what each was started from, and who is told when one ends.
import type { Logger } from "./logger.js";
import type { SandboxExitReason, SandboxRecord } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";
import type { TemplateRuntime } from "./templates/template-store.js";

/** What a sandbox was started from, for snapshots and forks (kept in memory: env vars may hold secrets). */
export interface LaunchSource {
  layers: string[];
  runtime?: TemplateRuntime | undefined;
  envVars: Record<string, string>;
}

export type ExitListener = (sandboxId: string, reason: SandboxExitReason) => void;

export class LiveSandboxes {
  private readonly sandboxes = new Map<string, HostedSandbox>();
  /** Layers, runtime and env vars each sandbox created by this process started with. */
  private readonly sources = new Map<string, LaunchSource>();
  private readonly exitListeners = new Set<ExitListener>();

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

  /** A sandbox handed to the control plane; `source` is known for those this process created. */
  add(sandbox: HostedSandbox, source?: LaunchSource): void {
    this.sandboxes.set(sandbox.record.sandboxId, sandbox);
    if (source) this.sources.set(sandbox.record.sandboxId, source);
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
  };
}
