// The host's CPU use between two heartbeats, from /proc/stat's aggregate line: the share of CPU time (all CPUs) that
// was not idle or waiting for I/O since the previous sample. The first sample, and hosts without /proc/stat, say
// nothing (undefined): placement then goes by counts alone, as before.
import { readFile } from "node:fs/promises";

interface Totals {
  busy: number;
  total: number;
}

/** The `cpu` line's fields: user nice system idle iowait irq softirq steal (guest time is already in user). */
export function parseProcStat(text: string): Totals | undefined {
  const line = text.split("\n", 1)[0];
  if (!line?.startsWith("cpu ")) return undefined;
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 5 || f.some((n) => !Number.isFinite(n))) return undefined;
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  const total = f.reduce((sum, n) => sum + n, 0);
  return { busy: total - idle, total };
}

export class CpuUse {
  #last: Totals | undefined;

  constructor(private readonly read: () => Promise<string> = () => readFile("/proc/stat", "utf8")) {}

  /** The busy share (0..1) since the previous call. */
  async sample(): Promise<number | undefined> {
    let now: Totals | undefined;
    try {
      now = parseProcStat(await this.read());
    } catch {
      return undefined;
    }
    const last = this.#last;
    this.#last = now;
    if (!now || !last || now.total <= last.total) return undefined;
    return Math.min(1, Math.max(0, (now.busy - last.busy) / (now.total - last.total)));
  }
}
