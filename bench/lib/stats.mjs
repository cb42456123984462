// Small statistics and printing helpers for the benchmarks: medians and percentiles, and one line per figure
// with its baseline and the ratio between them (these machines are shared and noisy).

export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export const median = (values) => percentile(values, 50);

export async function timeMs(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export async function sample(count, fn) {
  const out = [];
  for (let i = 0; i < count; i++) out.push(await timeMs(() => fn(i)));
  return out;
}

const rows = [];

/** Record one figure beside its baseline. `unit` is printed after values; ratio = value / baseline. */
export function report(name, value, unit, baseline, baselineName, target) {
  const ratio = baseline ? value / baseline : undefined;
  rows.push({ name, value, unit, baseline, baselineName, ratio, target });
  const fmt = (v) => (v === undefined ? "" : Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 2 : 1));
  const base = baseline === undefined ? "" : `  (baseline ${baselineName}: ${fmt(baseline)} ${unit}, ratio ${fmt(ratio)}×)`;
  const goal = target ? `  [target ${target}]` : "";
  process.stdout.write(`${name.padEnd(46)} ${fmt(value).padStart(9)} ${unit}${base}${goal}\n`);
}

export function reportedRows() {
  return rows;
}
