// Small inline SVG line charts (no chart library): a sparkline for a list row and a chart with its scale for the
// sandbox page. Values are drawn against `max` (or their own maximum) so that a flat idle line stays at the bottom.
export interface ChartPoint {
  /** Milliseconds since the epoch. */
  at: number;
  value: number;
}

function polyline(points: ChartPoint[], max: number, width: number, height: number): string {
  const first = points[0]!.at;
  const span = Math.max(1, points.at(-1)!.at - first);
  return points.map((p) => `${(((p.at - first) * width) / span).toFixed(1)},${(height - 1 - (Math.min(p.value, max) * (height - 2)) / max).toFixed(1)}`).join(" ");
}

/** A row's trend: nothing to draw before two samples. */
export function Sparkline({ points, max, label }: { points: ChartPoint[]; max?: number; label: string }) {
  if (points.length < 2) return <span class="muted">–</span>;
  const top = max ?? Math.max(1e-9, ...points.map((p) => p.value));
  return (
    <svg class="spark" viewBox="0 0 60 18" preserveAspectRatio="none" aria-label={label} data-points={points.length}>
      <polyline points={polyline(points, top, 60, 18)} fill="none" stroke="currentColor" stroke-width="1.5" vector-effect="non-scaling-stroke" />
    </svg>
  );
}

/** A titled chart: the latest value beside the title, the top of the scale and the time covered below. */
export function LineChart({ id, title, points, max, format }: { id: string; title: string; points: ChartPoint[]; max?: number; format: (v: number) => string }) {
  const top = max ?? Math.max(1e-9, ...points.map((p) => p.value));
  const latest = points.at(-1);
  const minutes = points.length >= 2 ? Math.round((points.at(-1)!.at - points[0]!.at) / 60_000) : 0;
  return (
    <figure class="chart" id={id} data-points={points.length}>
      <figcaption>
        {title} <strong>{latest ? format(latest.value) : "–"}</strong>
        <span class="muted"> of {format(top)}</span>
      </figcaption>
      {points.length >= 2 ? (
        <svg viewBox="0 0 200 60" preserveAspectRatio="none" aria-label={title}>
          <line x1="0" y1="59" x2="200" y2="59" stroke="currentColor" stroke-opacity=".25" />
          <polyline points={polyline(points, top, 200, 60)} fill="none" stroke="currentColor" stroke-width="1.5" vector-effect="non-scaling-stroke" />
        </svg>
      ) : (
        <div class="muted chart-empty">waiting for samples…</div>
      )}
      <div class="muted chart-span">{points.length} sample{points.length === 1 ? "" : "s"}{minutes > 0 ? ` · last ${minutes} min` : ""}</div>
    </figure>
  );
}
