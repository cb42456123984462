import { readFile, statfs } from "node:fs/promises";
import { availableParallelism } from "node:os";

interface CpuSample {
  idle: number;
  total: number;
}

async function cpuSample(): Promise<CpuSample | undefined> {
  const text = await readFile("/proc/stat", "utf8").catch(() => "");
  const fields = text.split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  if (fields.length < 4) return undefined;
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { idle, total: fields.reduce((a, b) => a + b, 0) };
}

async function memInfo(): Promise<{ total: number; used: number; cache: number }> {
  const text = await readFile("/proc/meminfo", "utf8").catch(() => "");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0) * 1024;
  let total = kb("MemTotal");
  let used = total - kb("MemAvailable");
  const cache = kb("Cached");
  // inside a sandbox /proc/meminfo is the host's; the cgroup's limit and usage are the sandbox's truth
  const limit = (await readFile("/sys/fs/cgroup/memory.max", "utf8").catch(() => "")).trim();
  const current = Number((await readFile("/sys/fs/cgroup/memory.current", "utf8").catch(() => "")).trim());
  if (/^\d+$/.test(limit) && Number(limit) < total) total = Number(limit);
  if (Number.isFinite(current) && current > 0 && /^\d+$/.test(limit)) used = current;
  return { total, used: Math.max(0, used), cache };
}

/** GET /metrics: upstream envd's snapshot of CPU, memory and root-filesystem usage. */
export function createMetricsReader(): () => Promise<Record<string, number>> {
  let last = { sample: undefined as CpuSample | undefined };
  return async () => {
    const sample = await cpuSample();
    let pct = 0;
    if (sample && last.sample && sample.total > last.sample.total) {
      const dt = sample.total - last.sample.total;
      pct = Math.round((1 - (sample.idle - last.sample.idle) / dt) * 10_000) / 100;
    }
    last = { sample };
    const mem = await memInfo();
    const fs = await statfs("/").catch(() => undefined);
    const diskTotal = fs ? fs.blocks * fs.bsize : 0;
    const diskUsed = fs ? (fs.blocks - fs.bfree) * fs.bsize : 0;
    return {
      ts: Math.floor(Date.now() / 1000),
      cpu_count: availableParallelism(),
      cpu_used_pct: Math.max(0, pct),
      mem_total: mem.total,
      mem_used: mem.used,
      mem_cache: mem.cache,
      mem_total_mib: Math.floor(mem.total / 1024 / 1024),
      mem_used_mib: Math.floor(mem.used / 1024 / 1024),
      disk_used: diskUsed,
      disk_total: diskTotal,
    };
  };
}
