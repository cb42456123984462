// Per-sandbox resource gauges on /metrics, set from the samples SandboxMetrics already takes (no extra sampling).
// Labelled by sandbox id and template; a sandbox's series are removed when it ends, so the label set stays bounded
// by the sandboxes alive.
import type { SandboxMetricSample } from "@burrow/orchestrator";
import { Gauge, type Registry } from "prom-client";

type Labels = "sandbox_id" | "template";

export class SandboxGauges {
  readonly #cpu: Gauge<Labels>;
  readonly #memory: Gauge<Labels>;
  readonly #disk: Gauge<Labels>;
  /** The labels each sandbox's series were set with, to remove exactly those. */
  readonly #labels = new Map<string, { sandbox_id: string; template: string }>();

  constructor(
    registry: Registry,
    private readonly templateOf: (sandboxId: string) => string | undefined,
  ) {
    const gauge = (name: string, help: string) => new Gauge<Labels>({ name, help, labelNames: ["sandbox_id", "template"], registers: [registry] });
    this.#cpu = gauge("burrow_sandbox_cpu_used_percent", "CPU a sandbox used at its last sample, in percent of its vCPUs.");
    this.#memory = gauge("burrow_sandbox_memory_used_bytes", "Memory a sandbox used at its last sample.");
    this.#disk = gauge("burrow_sandbox_disk_used_bytes", "Disk a sandbox's writable layer used at its last sample.");
  }

  set(sandboxId: string, sample: SandboxMetricSample): void {
    let labels = this.#labels.get(sandboxId);
    if (!labels) {
      labels = { sandbox_id: sandboxId, template: this.templateOf(sandboxId) ?? "" };
      this.#labels.set(sandboxId, labels);
    }
    this.#cpu.set(labels, sample.cpuUsedPct);
    this.#memory.set(labels, sample.memUsed);
    this.#disk.set(labels, sample.diskUsed);
  }

  remove(sandboxId: string): void {
    const labels = this.#labels.get(sandboxId);
    if (!labels) return;
    this.#labels.delete(sandboxId);
    for (const g of [this.#cpu, this.#memory, this.#disk]) g.remove(labels);
  }
}
