// Gauges computed when /metrics is scraped, from what the server already holds: sandboxes by state (the store)
// and template builds by status (the template builder). Nothing is counted twice or kept in step by hand.
import type { BuildStatus } from "@burrow/protocol";
import { Gauge, type Registry } from "prom-client";
import type { SandboxStore } from "../store/sandboxes.js";
import type { TemplateBuildService } from "../templates-api/index.js";

export function registerStateGauges(registry: Registry, store: SandboxStore, templates: TemplateBuildService | undefined): void {
  new Gauge({
    name: "burrow_sandboxes",
    help: "Sandboxes the control plane holds, by state (running, paused).",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const counts: Record<string, number> = { running: 0, paused: 0 };
      for (const row of store.list()) counts[row.state] = (counts[row.state] ?? 0) + 1;
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  if (!templates) return;
  new Gauge({
    name: "burrow_template_builds",
    help: "Template builds the builder knows, by status (waiting, building, ready, error).",
    labelNames: ["status"],
    registers: [registry],
    collect() {
      const counts: Partial<Record<BuildStatus, number>> = { waiting: 0, building: 0, ready: 0, error: 0 };
      for (const t of templates.list()) {
        let builds;
        try {
          builds = templates.templateBuilds(t.templateId).builds;
        } catch {
          continue; // deleted between list and lookup
        }
        for (const b of builds) counts[b.status] = (counts[b.status] ?? 0) + 1;
      }
      for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
    },
  });
}
