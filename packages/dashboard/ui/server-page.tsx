// The server page: GET /burrow/v1/server/stats every 2 s, and at once on each lifecycle event (live-lifecycle.ts) —
// sandboxes by state, creates per minute (the create counter's growth over the last minute of answers this page has
// seen), create and claim latency by source (the share of creates the warm pool served), pool fill, template builds
// and disk space.
import { useRef } from "preact/hooks";
import { api } from "./api.js";
import { bytes } from "./format.js";
import { LatencyHistogram, type LatencyBucket } from "./latency-histogram.js";
import { NodesCard } from "./nodes-card.js";
import { PoolFillCard, type PoolFillFigures } from "./pool-fill.js";
import { useLifecycleEvents } from "./live-lifecycle.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 2_000;
const RATE_WINDOW_MS = 60_000;

interface Latency {
  count: number;
  meanMs: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  buckets?: LatencyBucket[];
}

interface ServerStats {
  time: string;
  sandboxes: Record<string, number>;
  creates: Record<string, number>;
  createLatency: Latency;
  claimLatency: Record<string, Latency>;
  builds: Record<string, number>;
  pools?: PoolFillFigures[];
  disks: { name: string; totalBytes: number; freeBytes: number }[];
  cluster: { node: string; canManageNodes: boolean } | null;
}

interface Sample {
  at: number;
  creates: number;
  running: number;
}

const ms = (v: number | null) => (v === null ? "–" : v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`);

export function ServerPage() {
  const history = useRef<Sample[]>([]);
  const { data, error, refresh } = usePoll(
    async (signal) => {
      const stats = await api<ServerStats>("GET", "/burrow/v1/server/stats", undefined, signal);
      const at = Date.parse(stats.time);
      const creates = Object.values(stats.creates).reduce((a, b) => a + b, 0);
      history.current = [...history.current.filter((s) => at - s.at <= RATE_WINDOW_MS), { at, creates, running: stats.sandboxes["running"] ?? 0 }];
      return stats;
    },
    POLL_MS,
    [],
  );
  useLifecycleEvents(() => refresh());
  const samples = history.current;
  const first = samples[0];
  const last = samples.at(-1);
  // Counted, not extrapolated: until the page has seen a minute, the window is as long as it has watched.
  const windowMs = first && last ? last.at - first.at : 0;
  const inWindow = first && last && windowMs > 0 ? last.creates - first.creates : null;
  const windowLabel = windowMs >= RATE_WINDOW_MS - POLL_MS ? "in the last minute" : `in the last ${Math.round(windowMs / 1000)} s`;
  const claims = data ? Object.entries(data.claimLatency).sort(([a], [b]) => a.localeCompare(b)) : [];
  const claimed = claims.reduce((n, [, l]) => n + l.count, 0);
  return (
    <section class="server">
      <div class="toolbar">
        <h1>Server</h1>
        <span class="count">
          {data ? `as of ${data.time.slice(11, 19)} UTC` : "loading…"}
          {data?.cluster && ` · node ${data.cluster.node} of a cluster`}
        </span>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {data && (
        <div class="cards">
          <div class="card" id="sandboxes-by-state">
            <h2>Sandboxes</h2>
            {Object.entries(data.sandboxes).map(([state, n]) => (
              <div class="figure" key={state} data-state={state}>
                <span class="value">{n}</span> <span class="muted">{state}</span>
              </div>
            ))}
            <Sparkline values={samples.map((s) => s.running)} />
          </div>
          <div class="card" id="creates">
            <h2>Creates</h2>
            <div class="figure">
              <span class="value" id="creates-per-minute">{inWindow === null ? "–" : inWindow}</span> <span class="muted">{inWindow === null ? "per minute" : windowLabel}</span>
            </div>
            <div class="muted" id="creates-total">
              {data.creates["ok"] ?? 0} ok · {data.creates["error"] ?? 0} failed since start
            </div>
          </div>
          <div class="card" id="create-latency">
            <h2>Create latency</h2>
            <div class="figure">
              <span class="value">{ms(data.createLatency.p50Ms)}</span> <span class="muted">p50</span>
            </div>
            <div class="muted">p95 {ms(data.createLatency.p95Ms)} · mean {ms(data.createLatency.meanMs)} · n={data.createLatency.count}</div>
            <LatencyHistogram id="create-latency-histogram" buckets={data.createLatency.buckets ?? []} />
          </div>
          <div class="card wide" id="claims">
            <h2>Claim time by source</h2>
            <table>
              <thead>
                <tr>
                  <th>Source</th>
                  <th>Creates</th>
                  <th>Share</th>
                  <th>p50</th>
                  <th>p95</th>
                </tr>
              </thead>
              <tbody>
                {claims.map(([source, l]) => (
                  <tr key={source} data-source={source}>
                    <td>{source === "pool" ? "warm pool" : source}</td>
                    <td>{l.count}</td>
                    <td>{claimed ? `${Math.round((100 * l.count) / claimed)}%` : "–"}</td>
                    <td>{ms(l.p50Ms)}</td>
                    <td>{ms(l.p95Ms)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {claims.length === 0 && <p class="muted">No creates yet.</p>}
          </div>
          <PoolFillCard pools={data.pools ?? []} />
          {data.cluster?.canManageNodes && <NodesCard self={data.cluster.node} />}
          <div class="card" id="builds">
            <h2>Template builds</h2>
            {Object.entries(data.builds).map(([status, n]) => (
              <div class="figure" key={status}>
                <span class="value">{n}</span> <span class="muted">{status}</span>
              </div>
            ))}
          </div>
          <div class="card" id="disks">
            <h2>Disk</h2>
            {data.disks.map((d) => {
              const used = d.totalBytes - d.freeBytes;
              const pct = d.totalBytes ? (100 * used) / d.totalBytes : 0;
              return (
                <div key={d.name} class="disk" data-disk={d.name}>
                  <div>
                    {d.name}: {bytes(used)} of {bytes(d.totalBytes)} used ({pct.toFixed(0)}%)
                  </div>
                  <div class="bar">
                    <span style={{ width: `${pct}%` }} class={pct > 90 ? "full" : ""} />
                  </div>
                </div>
              );
            })}
          </div>
        </div>
      )}
    </section>
  );
}

/** Running sandboxes over the last minute of answers, as a polyline; nothing to draw before two. */
function Sparkline({ values }: { values: number[] }) {
  if (values.length < 2) return null;
  const max = Math.max(1, ...values);
  const points = values.map((v, i) => `${(i * 100) / (values.length - 1)},${30 - (v * 28) / max}`).join(" ");
  return (
    <svg class="sparkline" viewBox="0 0 100 32" preserveAspectRatio="none" aria-label="running sandboxes, last minute">
      <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" vector-effect="non-scaling-stroke" />
    </svg>
  );
}
