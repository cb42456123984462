// The orchestrator as the control plane uses it, with what observability needs around two calls: a create is timed
// by where its sandbox came from (a warm-pool claim or a launch), and a kill first reads the rest of the sandbox's
// log, since the kill removes the sandbox's directory and the log with it; every create's record goes to onCreated.
// Every other member passes through.
import type { CreateSandboxOptions, Orchestrator, SandboxRecord } from "@burrow/orchestrator";
import type { SandboxLogs } from "../logs/sandbox-logs.js";
import type { ServerMetrics } from "../metrics/prometheus.js";

export interface ObservedOrchestratorDeps {
  logs: SandboxLogs;
  metrics: ServerMetrics;
  /** Every create's record (alerts: a create that found the pool empty). */
  onCreated?: ((record: SandboxRecord) => void) | undefined;
}

export function observeOrchestrator(orchestrator: Orchestrator, d: ObservedOrchestratorDeps): Orchestrator {
  const createSandbox = async (opts: CreateSandboxOptions): Promise<SandboxRecord> => {
    const started = performance.now();
    const record = await orchestrator.createSandbox(opts);
    d.metrics.orchestratorCreateDuration.observe({ source: record.createdFrom ?? "launch" }, (performance.now() - started) / 1000);
    d.onCreated?.(record);
    return record;
  };
  const killSandbox = async (sandboxId: string, opts?: { signal?: AbortSignal }): Promise<boolean> => {
    await d.logs.flush(sandboxId).catch(() => undefined);
    return orchestrator.killSandbox(sandboxId, opts);
  };
  return new Proxy(orchestrator, {
    get(target, prop, receiver) {
      if (prop === "createSandbox") return createSandbox;
      if (prop === "killSandbox") return killSandbox;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
