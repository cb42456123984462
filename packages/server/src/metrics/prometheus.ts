// Prometheus metrics of the control plane. The registry is injected so that tests (and embedders running
// several servers in one process) never collide on the global registry.
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export interface ServerMetrics {
  readonly registry: Registry;
  readonly sandboxCreates: Counter<"result">;
  readonly sandboxKills: Counter<"reason">;
  readonly createDuration: Histogram<"result">;
  readonly gatewayRequests: Counter<"kind" | "route" | "outcome">;
  /** Failed exchanges with sandboxes by cause (refused, closed, timeout, unreachable, local, other, invalid_response). */
  readonly upstreamErrors: Counter<"cause">;
  /** The orchestrator's part of a create, by where the sandbox came from (pool: a warm-pool claim; launch). */
  readonly orchestratorCreateDuration: Histogram<"source">;
}

export function createServerMetrics(registry: Registry, countRunning: () => number): ServerMetrics {
  new Gauge({
    name: "burrow_sandboxes_running",
    help: "Sandboxes currently running.",
    registers: [registry],
    collect() {
      this.set(countRunning());
    },
  });
  return {
    registry,
    sandboxCreates: new Counter({
      name: "burrow_sandbox_creates_total",
      help: "Sandbox create requests by result (ok, error).",
      labelNames: ["result"],
      registers: [registry],
    }),
    sandboxKills: new Counter({
      name: "burrow_sandbox_kills_total",
      help: "Sandboxes ended, by reason (api, timeout, crashed, lost, orchestrator).",
      labelNames: ["reason"],
      registers: [registry],
    }),
    createDuration: new Histogram({
      name: "burrow_sandbox_create_duration_seconds",
      help: "Time from create request to a running sandbox.",
      labelNames: ["result"],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: "burrow_gateway_upstream_errors_total",
      help: "Exchanges with sandboxes that failed, by cause (refused, closed, timeout, unreachable, local, other, invalid_response).",
      labelNames: ["cause"],
      registers: [registry],
    }),
    orchestratorCreateDuration: new Histogram({
      name: "burrow_sandbox_claim_duration_seconds",
      help: "The orchestrator's part of a create, by source: pool (a warm-pool sandbox claimed), shell (a prepared sandbox given the template's root) or launch (started for the create).",
      labelNames: ["source"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    gatewayRequests: new Counter({
      name: "burrow_gateway_requests_total",
      help: "Requests through the sandbox gateway by kind (http, upgrade), route (header, host, signature) and outcome.",
      labelNames: ["kind", "route", "outcome"],
      registers: [registry],
    }),
  };
}
