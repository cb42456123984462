// Pool fill on /metrics: per pooled template, its target size and the sandboxes ready and starting, read from the
// orchestrator when scraped (the server's stats route reads the same gauge, so the two never disagree).
import type { Orchestrator } from "@burrow/orchestrator";
import { Gauge, type Registry } from "prom-client";

export const POOL_GAUGE = "burrow_pool_sandboxes";

export function registerPoolGauge(registry: Registry, orchestrator: Orchestrator): void {
  if (!orchestrator.poolFill || registry.getSingleMetric(POOL_GAUGE)) return;
  const fill = () => orchestrator.poolFill?.() ?? [];
  new Gauge({
    name: POOL_GAUGE,
    help: "Sandboxes of each pool (template, kind warm, prestarted or shells — prepared for any template, template \"*\"): target size, ready, starting.",
    labelNames: ["template", "kind", "state"],
    registers: [registry],
    collect() {
      // A pool that went away (none does yet) must not linger at its last figures.
      this.reset();
      for (const p of fill()) {
        for (const state of ["target", "ready", "starting"] as const) this.set({ template: p.template, kind: p.kind, state }, p[state]);
      }
    },
  });
}
