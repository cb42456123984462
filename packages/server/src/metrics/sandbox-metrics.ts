// Per-sandbox resource samples for GET /sandboxes/:id/metrics. Kept in memory only: a bounded ring per
// sandbox, filled by a periodic sweep plus one sample right after create so the list is never empty.
import type { Logger } from "pino";
import type { Orchestrator, SandboxMetricSample } from "@burrow/orchestrator";
import type { SandboxGauges } from "./sandbox-gauges.js";

export interface SandboxMetricsOptions {
  intervalMs: number;
  /** Samples kept per sandbox. */
  retention: number;
  logger?: Logger;
  /** Where each sample also goes (the per-sandbox gauges on /metrics). */
  gauges?: SandboxGauges;
  /** Every sample as it is taken (alerts watch the OOM kill count). */
  onSample?: (sandboxId: string, sample: SandboxMetricSample) => void;
}

export class SandboxMetrics {
  readonly #orchestrator: Orchestrator;
  readonly #opts: SandboxMetricsOptions;
  readonly #rings = new Map<string, SandboxMetricSample[]>();
  /** The first sample of a new sandbox, awaited by readers so that they never see an empty list. */
  readonly #first = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #sweeping = false;

  constructor(orchestrator: Orchestrator, opts: SandboxMetricsOptions) {
    this.#orchestrator = orchestrator;
    this.#opts = opts;
  }

  start(): void {
    if (this.#timer || this.#abort.signal.aborted) return;
    this.#timer = setInterval(() => void this.#sweep(), this.#opts.intervalMs);
    this.#timer.unref();
  }

  /**
   * Start keeping samples for a sandbox. The first sample is taken when someone first asks for samples (or at
   * the next sweep), not here: sampling forks `du`, which would slow every create down.
   */
  track(sandboxId: string): void {
    if (this.#rings.has(sandboxId)) return;
    this.#rings.set(sandboxId, []);
  }

  untrack(sandboxId: string): void {
    this.#rings.delete(sandboxId);
    this.#first.delete(sandboxId);
    this.#opts.gauges?.remove(sandboxId);
  }

  /** Samples with `start ≤ timestamp ≤ end` (either bound optional), oldest first. */
  async samples(sandboxId: string, range: { start?: Date; end?: Date } = {}): Promise<SandboxMetricSample[]> {
    if (this.#rings.get(sandboxId)?.length === 0) {
      let first = this.#first.get(sandboxId);
      if (!first) {
        first = this.#sample(sandboxId).finally(() => this.#first.delete(sandboxId));
        this.#first.set(sandboxId, first);
      }
      await first;
    }
    const ring = this.#rings.get(sandboxId) ?? [];
    const start = range.start?.getTime() ?? -Infinity;
    const end = range.end?.getTime() ?? Infinity;
    return ring.filter((s) => s.timestamp.getTime() >= start && s.timestamp.getTime() <= end);
  }

  close(): void {
    this.#abort.abort();
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#rings.clear();
    this.#first.clear();
  }

  async #sweep(): Promise<void> {
    // A slow orchestrator must not pile up overlapping sweeps.
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      for (const sandboxId of [...this.#rings.keys()]) await this.#sample(sandboxId);
    } finally {
      this.#sweeping = false;
    }
  }

  async #sample(sandboxId: string): Promise<void> {
    if (this.#abort.signal.aborted) return;
    try {
      const sample = await this.#orchestrator.sampleMetrics(sandboxId, { signal: this.#abort.signal });
      const ring = this.#rings.get(sandboxId);
      if (!sample || !ring) return;
      ring.push(sample);
      this.#opts.gauges?.set(sandboxId, sample);
      this.#opts.onSample?.(sandboxId, sample);
      if (ring.length > this.#opts.retention) ring.splice(0, ring.length - this.#opts.retention);
    } catch (err) {
      if (!this.#abort.signal.aborted) this.#opts.logger?.warn({ err, sandboxId }, "metrics sample failed");
    }
  }
}
