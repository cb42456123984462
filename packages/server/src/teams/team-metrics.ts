// E2B's team metrics (GET /teams/{teamID}/metrics): concurrent sandboxes and the start rate, sampled per team at a
// fixed interval and kept in memory for a bounded time (they are a view of the recent past, not a record).
export interface TeamMetricSample {
  timestampUnix: number;
  concurrentSandboxes: number;
  /** Sandboxes started per second over the interval before the sample. */
  sandboxStartRate: number;
}

export interface TeamMetricsDeps {
  /** Running sandboxes per team now. */
  running: () => Map<string, number>;
  intervalMs?: number;
  retentionMs?: number;
}

const DEFAULT_INTERVAL_MS = 5_000;
const DEFAULT_RETENTION_MS = 24 * 3600_000;

export class TeamMetrics {
  readonly #d: TeamMetricsDeps;
  readonly #interval: number;
  readonly #retention: number;
  readonly #samples = new Map<string, TeamMetricSample[]>();
  readonly #startsSinceSample = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: TeamMetricsDeps) {
    this.#d = deps;
    this.#interval = deps.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.#retention = deps.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  start(): void {
    this.sample();
    this.#timer = setInterval(() => this.sample(), this.#interval);
    this.#timer.unref();
  }

  /** Count sandboxes a team started (created, forked, branched, resumed). */
  started(teamId: string, count = 1): void {
    this.#startsSinceSample.set(teamId, (this.#startsSinceSample.get(teamId) ?? 0) + count);
  }

  sample(now = Date.now()): void {
    const running = this.#d.running();
    const teams = new Set([...running.keys(), ...this.#startsSinceSample.keys(), ...this.#samples.keys()]);
    const cutoff = Math.floor((now - this.#retention) / 1000);
    for (const teamId of teams) {
      const list = this.#samples.get(teamId) ?? [];
      const starts = this.#startsSinceSample.get(teamId) ?? 0;
      list.push({
        timestampUnix: Math.floor(now / 1000),
        concurrentSandboxes: running.get(teamId) ?? 0,
        sandboxStartRate: starts / (this.#interval / 1000),
      });
      while (list.length > 0 && list[0]!.timestampUnix < cutoff) list.shift();
      this.#samples.set(teamId, list);
    }
    this.#startsSinceSample.clear();
  }

  /** Samples within [startSec, endSec] (unix seconds), oldest first. */
  query(teamId: string, startSec: number, endSec: number): TeamMetricSample[] {
    return (this.#samples.get(teamId) ?? []).filter((s) => s.timestampUnix >= startSec && s.timestampUnix <= endSec);
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}
