// A latency histogram as inline SVG bars: one bar per bucket of the server's Prometheus histogram (counts per bucket,
// not cumulative), labelled by the bucket's upper bound; empty buckets at either end are left out.
export interface LatencyBucket {
  /** Upper bound in milliseconds; null for what lies above the largest bound. */
  upToMs: number | null;
  count: number;
}

const bound = (b: LatencyBucket, previous: LatencyBucket | undefined) =>
  b.upToMs === null ? `> ${label(previous?.upToMs ?? 0)}` : `≤ ${label(b.upToMs)}`;
const label = (ms: number) => (ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`);

export function LatencyHistogram({ id, buckets }: { id: string; buckets: LatencyBucket[] }) {
  const first = buckets.findIndex((b) => b.count > 0);
  if (first < 0) return <div class="muted" id={id}>no creates yet</div>;
  const last = buckets.length - 1 - [...buckets].reverse().findIndex((b) => b.count > 0);
  const shown = buckets.slice(first, last + 1);
  const top = Math.max(...shown.map((b) => b.count));
  const width = 100 / shown.length;
  return (
    <figure class="histogram" id={id}>
      <svg viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label="create latency histogram">
        {shown.map((b, i) => (
          <rect key={i} x={i * width + width * 0.1} width={width * 0.8} y={40 - (38 * b.count) / top} height={(38 * b.count) / top} fill="currentColor">
            <title>{`${bound(b, buckets[first + i - 1])}: ${b.count}`}</title>
          </rect>
        ))}
      </svg>
      <figcaption class="muted">
        {bound(shown[0]!, buckets[first - 1])} … {bound(shown.at(-1)!, buckets[last - 1])}
      </figcaption>
    </figure>
  );
}
