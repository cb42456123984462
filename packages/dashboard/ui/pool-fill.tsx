// Pool fill on the server page: for each pool the orchestrator keeps (the warm pool of the configured template, and
// the prestarted pools of shipped templates), how many sandboxes wait ready and how many are starting, against the
// pool's target size. An empty pool means creates launch instead of claiming.
import "./bus-ops.css";

export interface PoolFillFigures {
  template: string;
  kind: string;
  target: number;
  ready: number;
  starting: number;
}

export function PoolFillCard({ pools }: { pools: PoolFillFigures[] }) {
  return (
    <div class="card" id="pool-fill">
      <h2>Pool fill</h2>
      {pools.length === 0 && <p class="muted">No pool: every create launches a sandbox.</p>}
      {pools.map((p) => {
        const pct = (n: number) => (p.target > 0 ? Math.min(100, (100 * n) / p.target) : 0);
        return (
          <div class="pool" key={`${p.kind}/${p.template}`} data-template={p.template} data-kind={p.kind} data-ready={p.ready} data-starting={p.starting} data-target={p.target}>
            <div>
              <code>{p.template}</code> <span class="muted">{p.kind}</span>: <span class="ready">{p.ready}</span> of {p.target} ready
              {p.starting > 0 && <span class="muted"> · {p.starting} starting</span>}
            </div>
            <div class="bar pool-bar" role="img" aria-label={`${p.ready} of ${p.target} ready, ${p.starting} starting`}>
              <span class={p.ready === 0 ? "full" : ""} style={{ width: `${pct(p.ready)}%` }} />
              <span class="starting" style={{ width: `${pct(p.starting)}%` }} />
            </div>
          </div>
        );
      })}
    </div>
  );
}
