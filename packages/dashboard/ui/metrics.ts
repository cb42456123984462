// A sandbox's resource samples (E2B's GET /sandboxes/{id}/metrics) as chart points.
import { api, sandboxPath } from "./api.js";
import type { ChartPoint } from "./chart.js";

export interface SandboxMetric {
  timestamp: string;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  diskUsed: number;
  diskTotal: number;
}

/** Samples of the last `sinceSec` seconds, oldest first. */
export function loadMetrics(id: string, sinceSec: number, signal: AbortSignal): Promise<SandboxMetric[]> {
  const start = Math.floor(Date.now() / 1000) - sinceSec;
  return api<SandboxMetric[]>("GET", `${sandboxPath(id)}/metrics?start=${start}`, undefined, signal);
}

export function series(samples: SandboxMetric[], pick: (m: SandboxMetric) => number): ChartPoint[] {
  return samples.map((m) => ({ at: Date.parse(m.timestamp), value: pick(m) }));
}
