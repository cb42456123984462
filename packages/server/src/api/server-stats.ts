// GET /burrow/v1/server/stats: the figures the dashboard's server page shows, as JSON, read from the same
// Prometheus registry /metrics serves (so the two never disagree) plus the free space of the state directory's
// filesystems. Read-only and instance-wide like /metrics, which answers the same numbers without a key.
import { statfs } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from "prom-client";
import { POOL_GAUGE } from "../metrics/pool-gauge.js";

export interface LatencySummary {
  count: number;
  /** Mean, and quantiles estimated from the histogram's buckets (linear within a bucket), in milliseconds. */
  meanMs: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  /**
   * The histogram itself: how many fell in each bucket (not cumulative), by its upper bound in milliseconds; the
   * last entry (upToMs null) holds those above the largest bound.
   */
  buckets: { upToMs: number | null; count: number }[];
}

export interface DiskFigures {
  /** `state` (database, disk image) or `data` (the mounted image: layers, sandboxes); paths stay on the host. */
  name: "state" | "data";
  totalBytes: number;
  freeBytes: number;
}

export interface PoolFillFigures {
  template: string;
  kind: string;
  target: number;
  ready: number;
  starting: number;
}

export interface ServerStats {
  time: string;
  /** Sandboxes the control plane holds, by state. */
  sandboxes: Record<string, number>;
  /** Create requests since the server started, by result (ok, error); a client derives rates from two answers. */
  creates: Record<string, number>;
  /** Create requests end to end. */
  createLatency: LatencySummary;
  /** The orchestrator's part of a create by source: `pool` (a warm sandbox claimed) or `launch`. */
  claimLatency: Record<string, LatencySummary>;
  /** Template builds by status. */
  builds: Record<string, number>;
  /** Each pool's fill (the orchestrator's pools by template): target size, ready, starting. */
  pools: PoolFillFigures[];
  disks: DiskFigures[];
  /**
   * On a node of a cluster: its name, and whether the caller may see and manage the nodes (GET /burrow/v1/nodes
   * needs the instance admin key). null on a single machine.
   */
  cluster: { node: string; canManageNodes: boolean } | null;
}

type Metrics = MetricObjectWithValues<MetricValue<string> | MetricValueWithName<string>>[];

export function registerServerStatsRoute(app: FastifyInstance, opts: { registry: Registry; stateDir: string; clusterNode?: string | undefined }): void {
  app.get("/burrow/v1/server/stats", { schema: { summary: "Server figures for the dashboard", hide: true } }, async (request): Promise<ServerStats> => {
    const metrics = (await opts.registry.getMetricsAsJSON()) as Metrics;
    const claims = byLabel(metrics, "burrow_sandbox_claim_duration_seconds", "source");
    return {
      time: new Date().toISOString(),
      sandboxes: { running: 0, paused: 0, ...sumByLabel(metrics, "burrow_sandboxes", "state") },
      creates: { ok: 0, error: 0, ...sumByLabel(metrics, "burrow_sandbox_creates_total", "result") },
      createLatency: summarize(valuesOf(metrics, "burrow_sandbox_create_duration_seconds").filter((v) => v.labels["result"] === "ok")),
      claimLatency: Object.fromEntries([...claims].map(([source, values]) => [source, summarize(values)])),
      builds: sumByLabel(metrics, "burrow_template_builds", "status"),
      pools: pools(metrics),
      disks: await disks(opts.stateDir),
      cluster: opts.clusterNode === undefined ? null : { node: opts.clusterNode, canManageNodes: request.caller?.instanceAdmin === true },
    };
  });
}

function pools(metrics: Metrics): PoolFillFigures[] {
  const out = new Map<string, PoolFillFigures>();
  for (const v of valuesOf(metrics, POOL_GAUGE)) {
    const template = String(v.labels["template"] ?? "");
    const kind = String(v.labels["kind"] ?? "");
    const key = `${kind}\n${template}`;
    let p = out.get(key);
    if (!p) out.set(key, (p = { template, kind, target: 0, ready: 0, starting: 0 }));
    const state = v.labels["state"];
    if (state === "target" || state === "ready" || state === "starting") p[state] = v.value;
  }
  return [...out.values()];
}

function valuesOf(metrics: Metrics, name: string): MetricValueWithName<string>[] {
  return (metrics.find((m) => m.name === name)?.values ?? []) as MetricValueWithName<string>[];
}

function sumByLabel(metrics: Metrics, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of valuesOf(metrics, name)) {
    const key = String(v.labels[label] ?? "");
    out[key] = (out[key] ?? 0) + v.value;
  }
  return out;
}

function byLabel(metrics: Metrics, name: string, label: string): Map<string, MetricValueWithName<string>[]> {
  const out = new Map<string, MetricValueWithName<string>[]>();
  for (const v of valuesOf(metrics, name)) {
    const key = String(v.labels[label] ?? "");
    out.set(key, [...(out.get(key) ?? []), v]);
  }
  return out;
}

/** One histogram's series (one label set): count, mean and bucket-interpolated quantiles. */
function summarize(values: MetricValueWithName<string>[]): LatencySummary {
  const count = values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
  const sum = values.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
  const buckets = values
    .filter((v) => v.metricName?.endsWith("_bucket") && v.labels["le"] !== "+Inf")
    .map((v) => ({ le: Number(v.labels["le"]), cumulative: v.value }))
    .sort((a, b) => a.le - b.le);
  const quantile = (q: number): number | null => {
    if (count === 0) return null;
    const rank = q * count;
    let lower = 0;
    let below = 0;
    for (const b of buckets) {
      if (b.cumulative >= rank) return 1000 * (lower + ((b.le - lower) * (rank - below)) / Math.max(1, b.cumulative - below));
      lower = b.le;
      below = b.cumulative;
    }
    return 1000 * lower; // beyond the largest bucket: all a histogram can say is "at least this"
  };
  const histogram: LatencySummary["buckets"] = buckets.map((b, i) => ({ upToMs: 1000 * b.le, count: b.cumulative - (buckets[i - 1]?.cumulative ?? 0) }));
  histogram.push({ upToMs: null, count: count - (buckets.at(-1)?.cumulative ?? 0) });
  return { count, meanMs: count ? (1000 * sum) / count : null, p50Ms: quantile(0.5), p95Ms: quantile(0.95), buckets: histogram };
}

/** The state directory and its data mount (layers, sandboxes): either filling up stops sandboxes. */
async function disks(stateDir: string): Promise<DiskFigures[]> {
  const out: DiskFigures[] = [];
  for (const [name, path] of [["state", stateDir], ["data", join(stateDir, "data")]] as const) {
    if (!existsSync(path)) continue;
    try {
      const s = await statfs(path);
      out.push({ name, totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize });
    } catch {
      // Being unmounted: the other one still tells.
    }
  }
  return out;
}
