// E2B's team metrics (GET /teams/{teamID}/metrics): concurrent sandboxes and the start rate, sampled per team at a
// fixed interval into burrow.db (team_metric_samples), so that they survive a restart, and deleted past the
// retention. A team is sampled while it runs or starts sandboxes and for the retention after its last activity (its
// zeros are part of the picture), then no more, so idle teams cost no writes.
import type { Db } from "../store/database.js";

export interface TeamMetricSample {
  timestampUnix: number;
  concurrentSandboxes: number;
  /** Sandboxes started per second over the interval before the sample. */
  sandboxStartRate: number;
}

export interface TeamMetricsDeps {
  db: Db;
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
  /** Teams still sampled, with the time (ms) of their last activity. */
  readonly #active = new Map<string, number>();
  readonly #startsSinceSample = new Map<string, number>();
  readonly #insert;
  readonly #prune;
  readonly #query;
  readonly #write;
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: TeamMetricsDeps) {
    this.#d = deps;
    this.#interval = deps.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.#retention = deps.retentionMs ?? DEFAULT_RETENTION_MS;
    const db = deps.db;
    this.#insert = db.prepare<[string, number, number, number]>(
      "INSERT OR REPLACE INTO team_metric_samples (team_id, ts, concurrent, start_rate) VALUES (?, ?, ?, ?)",
    );
    this.#prune = db.prepare<[number]>("DELETE FROM team_metric_samples WHERE ts < ?");
    this.#query = db.prepare<[string, number, number], { ts: number; concurrent: number; start_rate: number }>(
      "SELECT ts, concurrent, start_rate FROM team_metric_samples WHERE team_id = ? AND ts BETWEEN ? AND ? ORDER BY ts",
    );
    this.#write = db.transaction((rows: { teamId: string; ts: number; concurrent: number; rate: number }[], cutoffSec: number) => {
      for (const r of rows) this.#insert.run(r.teamId, r.ts, r.concurrent, r.rate);
      this.#prune.run(cutoffSec);
    });
    // Teams active within the retention before a restart keep being sampled.
    const since = Math.floor((Date.now() - this.#retention) / 1000);
    const recent = db
      .prepare<[number], { team_id: string; ts: number }>(
        "SELECT team_id, max(ts) AS ts FROM team_metric_samples WHERE ts >= ? AND (concurrent > 0 OR start_rate > 0) GROUP BY team_id",
      )
      .all(since);
    for (const r of recent) this.#active.set(r.team_id, r.ts * 1000);
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
    for (const [teamId, n] of running) if (n > 0) this.#active.set(teamId, now);
    for (const teamId of this.#startsSinceSample.keys()) this.#active.set(teamId, now);
    const ts = Math.floor(now / 1000);
    const rows: { teamId: string; ts: number; concurrent: number; rate: number }[] = [];
    for (const [teamId, lastActive] of this.#active) {
      if (now - lastActive > this.#retention) {
        this.#active.delete(teamId);
        continue;
      }
      const starts = this.#startsSinceSample.get(teamId) ?? 0;
      rows.push({ teamId, ts, concurrent: running.get(teamId) ?? 0, rate: starts / (this.#interval / 1000) });
    }
    this.#startsSinceSample.clear();
    this.#write(rows, Math.floor((now - this.#retention) / 1000));
  }

  /** Samples within [startSec, endSec] (unix seconds), oldest first. */
  query(teamId: string, startSec: number, endSec: number): TeamMetricSample[] {
    return this.#query.all(teamId, startSec, endSec).map((r) => ({ timestampUnix: r.ts, concurrentSandboxes: r.concurrent, sandboxStartRate: r.start_rate }));
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}
