// Resource limits and accounting, one implementation per controller family. Both share one contract so
// the sandbox cgroup does not care which layout it runs on.
import { totalmem } from "node:os";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import type { CgroupSample, SandboxLimits } from "../types.js";
import { parseKeyValues, readOptional, readText, writeText } from "./cgroup-fs.js";

export interface LimitsBackend {
  setLimits(limits: SandboxLimits): Promise<void>;
  sample(): Promise<CgroupSample>;
}

/** CFS period: 100 ms is the kernel default and keeps quota granularity fine enough for fractional cores. */
export const CPU_PERIOD_US = 100_000;
/** The kernel refuses quotas below 1 ms. */
const MIN_QUOTA_US = 1_000;

export interface ResolvedLimits {
  memoryBytes: number;
  cpuQuotaUs: number;
  pids: number;
}

export function resolveLimits(l: SandboxLimits): ResolvedLimits {
  if (!(l.memoryMB > 0) || !(l.cpuCount > 0) || !Number.isInteger(l.pids) || l.pids < 1) {
    throw new BurrowError(Code.InvalidArgument, `limits must be positive (memoryMB ${l.memoryMB}, cpuCount ${l.cpuCount}, pids ${l.pids})`);
  }
  return {
    memoryBytes: Math.round(l.memoryMB * 1024 * 1024),
    cpuQuotaUs: Math.max(MIN_QUOTA_US, Math.round(l.cpuCount * CPU_PERIOD_US)),
    pids: l.pids,
  };
}

/** An unlimited memory limit reads as a huge number ("max" on v2): report the host's memory instead. */
function capLimit(bytes: number): number {
  return Math.min(bytes, totalmem());
}

/** v1 controllers, each in its own directory (memory, cpu, cpuacct, pids; any may share a dir). */
export class V1Limits implements LimitsBackend {
  constructor(private readonly dirs: { memory: string; cpu?: string; cpuacct?: string; pids?: string }) {}

  async setLimits(limits: SandboxLimits): Promise<void> {
    const r = resolveLimits(limits);
    const mem = join(this.dirs.memory, "memory.limit_in_bytes");
    const memsw = join(this.dirs.memory, "memory.memsw.limit_in_bytes");
    // memsw (memory+swap) must stay ≥ the memory limit at every step, so the order depends on the
    // direction; setting both equal means the sandbox gets no swap.
    const hasMemsw = (await readOptional(memsw)) !== undefined;
    const current = Number((await readText(mem)).trim());
    const value = String(r.memoryBytes);
    if (hasMemsw && r.memoryBytes > current) await writeText(memsw, value);
    await writeText(mem, value);
    if (hasMemsw && r.memoryBytes <= current) await writeText(memsw, value);
    if (this.dirs.cpu !== undefined) {
      await writeText(join(this.dirs.cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
      await writeText(join(this.dirs.cpu, "cpu.cfs_quota_us"), String(r.cpuQuotaUs));
    }
    if (this.dirs.pids !== undefined) await writeText(join(this.dirs.pids, "pids.max"), String(r.pids));
  }

  async sample(): Promise<CgroupSample> {
    const [usage, stat, limit, cpu, oom] = await Promise.all([
      readText(join(this.dirs.memory, "memory.usage_in_bytes")),
      readText(join(this.dirs.memory, "memory.stat")),
      readText(join(this.dirs.memory, "memory.limit_in_bytes")),
      this.dirs.cpuacct === undefined ? Promise.resolve("0") : readText(join(this.dirs.cpuacct, "cpuacct.usage")),
      readOptional(join(this.dirs.memory, "memory.oom_control")),
    ]);
    const s = parseKeyValues(stat);
    return {
      cpuUsageNs: Number(cpu.trim()),
      memoryUsedBytes: Number(usage.trim()),
      memoryCacheBytes: s.get("total_cache") ?? s.get("cache") ?? 0,
      memoryLimitBytes: capLimit(Number(limit.trim())),
      oomKills: oom === undefined ? 0 : (parseKeyValues(oom).get("oom_kill") ?? 0),
    };
  }
}

/** The cgroup2 controllers in one directory. */
export class V2Limits implements LimitsBackend {
  constructor(private readonly dir: string) {}

  async setLimits(limits: SandboxLimits): Promise<void> {
    const r = resolveLimits(limits);
    await writeText(join(this.dir, "memory.max"), String(r.memoryBytes));
    // No swap: memory.swap.max exists only with swap accounting compiled in.
    if ((await readOptional(join(this.dir, "memory.swap.max"))) !== undefined) {
      await writeText(join(this.dir, "memory.swap.max"), "0");
    }
    await writeText(join(this.dir, "cpu.max"), `${r.cpuQuotaUs} ${CPU_PERIOD_US}`);
    await writeText(join(this.dir, "pids.max"), String(r.pids));
  }

  async sample(): Promise<CgroupSample> {
    const [current, stat, max, cpu, events] = await Promise.all([
      readText(join(this.dir, "memory.current")),
      readText(join(this.dir, "memory.stat")),
      readText(join(this.dir, "memory.max")),
      readText(join(this.dir, "cpu.stat")),
      readOptional(join(this.dir, "memory.events")),
    ]);
    const limit = max.trim() === "max" ? Number.POSITIVE_INFINITY : Number(max.trim());
    return {
      cpuUsageNs: (parseKeyValues(cpu).get("usage_usec") ?? 0) * 1000,
      memoryUsedBytes: Number(current.trim()),
      memoryCacheBytes: parseKeyValues(stat).get("file") ?? 0,
      memoryLimitBytes: capLimit(limit),
      oomKills: events === undefined ? 0 : (parseKeyValues(events).get("oom_kill") ?? 0),
    };
  }
}
