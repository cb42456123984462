// One sandbox's CPU, memory and disk over time: its metrics (the server keeps a bounded ring of samples, one every
// few seconds) polled every 5 s and drawn as inline SVG charts.
import { LineChart } from "./chart.js";
import { bytes } from "./format.js";
import { loadMetrics, series } from "./metrics.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 5_000;
/** As far back as the charts reach; the server's ring may hold less. */
const SINCE_S = 3_600;

export function SandboxCharts({ id }: { id: string }) {
  const { data, error } = usePoll((signal) => loadMetrics(id, SINCE_S, signal), POLL_MS, [id]);
  const samples = data ?? [];
  const last = samples.at(-1);
  return (
    <div class="charts" id="sandbox-charts">
      {error && <p class="error" role="alert">{error}</p>}
      <LineChart id="chart-cpu" title="CPU" points={series(samples, (m) => m.cpuUsedPct)} max={100} format={(v) => `${v.toFixed(1)}%`} />
      <LineChart id="chart-memory" title="Memory" points={series(samples, (m) => m.memUsed)} {...(last ? { max: last.memTotal } : {})} format={bytes} />
      <LineChart id="chart-disk" title="Disk" points={series(samples, (m) => m.diskUsed)} {...(last ? { max: last.diskTotal } : {})} format={bytes} />
    </div>
  );
}
