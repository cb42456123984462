// A sandbox's resource samples as chart points. A sandbox's history comes once from E2B's GET /sandboxes/{id}/metrics;
// while it is kept fresh, later polls add the latest sample through the batched GET /sandboxes/metrics, one request
// for every sandbox asked for in the same tick (the sandboxes list's visible rows) instead of one per sandbox.
import { api, sandboxPath } from "./api.js";
import type { ChartPoint } from "./chart.js";

export interface SandboxMetric {
  timestamp: string;
  timestampUnix: number;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  diskUsed: number;
  diskTotal: number;
}

/** The batched route's maxItems. */
const BATCH_MAX = 100;
/**
 * A held history older than this has a gap (the row scrolled away, the page was hidden): it is fetched whole again.
 * Three polls of 5 s, so that one slow or failed round does not cost a refetch.
 */
const STALE_MS = 15_000;

interface Held {
  samples: SandboxMetric[];
  sinceSec: number;
  refreshedAt: number;
}

interface Waiter {
  id: string;
  sinceSec: number;
  resolve: (m: SandboxMetric[]) => void;
  reject: (e: unknown) => void;
}

const held = new Map<string, Held>();
/** Ids asked for in this tick, grouped by the caller's signal (a batch is aborted only with its callers). */
const pending = new Map<AbortSignal, Array<Waiter>>();

/** Samples of the last `sinceSec` seconds, oldest first. */
export function loadMetrics(id: string, sinceSec: number, signal: AbortSignal): Promise<SandboxMetric[]> {
  const h = held.get(id);
  if (!h || h.sinceSec < sinceSec || Date.now() - h.refreshedAt > STALE_MS) return loadHistory(id, sinceSec, signal);
  return new Promise((resolve, reject) => {
    let queue = pending.get(signal);
    if (!queue) {
      queue = [];
      pending.set(signal, queue);
      queueMicrotask(() => {
        pending.delete(signal);
        void flush(queue!, signal);
      });
    }
    queue.push({ id, sinceSec, resolve, reject });
  });
}

async function loadHistory(id: string, sinceSec: number, signal: AbortSignal): Promise<SandboxMetric[]> {
  const start = Math.floor(Date.now() / 1000) - sinceSec;
  const samples = await api<SandboxMetric[]>("GET", `${sandboxPath(id)}/metrics?start=${start}`, undefined, signal);
  held.set(id, { samples, sinceSec, refreshedAt: Date.now() });
  return samples;
}

async function flush(queue: Array<Waiter>, signal: AbortSignal): Promise<void> {
  const ids = [...new Set(queue.map((q) => q.id))];
  try {
    const latest: Record<string, SandboxMetric> = {};
    for (let i = 0; i < ids.length; i += BATCH_MAX) {
      const chunk = ids.slice(i, i + BATCH_MAX);
      const got = await api<{ sandboxes: Record<string, SandboxMetric> }>(
        "GET", `/sandboxes/metrics?sandbox_ids=${chunk.map(encodeURIComponent).join(",")}`, undefined, signal,
      );
      Object.assign(latest, got.sandboxes);
    }
    const now = Date.now();
    for (const q of queue) {
      const h = held.get(q.id);
      if (!h) {
        // Forgotten meanwhile (evicted): answer what the batch had without keeping it.
        q.resolve(latest[q.id] ? [latest[q.id]!] : []);
        continue;
      }
      const sample = latest[q.id];
      // A sandbox the batch leaves out (killed, or another team's) keeps what it had; the list drops its row.
      if (sample && sample.timestamp !== h.samples.at(-1)?.timestamp) h.samples = [...h.samples, sample];
      h.samples = h.samples.filter((m) => m.timestampUnix >= now / 1000 - h.sinceSec);
      h.refreshedAt = now;
      // Another view may hold a longer window of the same sandbox: each caller gets the window it asked for.
      q.resolve(h.samples.filter((m) => m.timestampUnix >= now / 1000 - q.sinceSec));
    }
  } catch (err) {
    for (const q of queue) q.reject(err);
  }
  // Histories nobody refreshed lately would only be fetched whole again: drop them so the map stays small.
  for (const [id, h] of held) if (Date.now() - h.refreshedAt > STALE_MS) held.delete(id);
}

export function series(samples: SandboxMetric[], pick: (m: SandboxMetric) => number): ChartPoint[] {
  return samples.map((m) => ({ at: Date.parse(m.timestamp), value: pick(m) }));
}
