// Metrics of a sandbox, sampled when asked: CPU use since its previous sample (cgroup CPU time over wall time, per
// core of its limit), memory from its cgroups, disk from its writable layer (cached a while: du walks the tree).
import { diskUsageBytes } from "./disk-usage.js";
import type { SandboxMetricSample } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";

const DISK_USAGE_TTL_MS = 30_000;

interface CpuMark {
  usageNs: number;
  atNs: bigint;
}

export class MetricsSampler {
  /** @param limitUsage what a writable dir's disk limit counts (SandboxStorage.limitUsage) */
  constructor(private readonly limitUsage?: (dir: string, signal?: AbortSignal) => Promise<number | undefined>) {}

  /** Per sandbox (gone with it): its CPU time at its previous sample. */
  private readonly cpuMarks = new WeakMap<HostedSandbox, CpuMark>();
  private readonly diskUsage = new WeakMap<HostedSandbox, { bytes: number; at: number }>();

  async sample(sandbox: HostedSandbox, signal?: AbortSignal): Promise<SandboxMetricSample> {
    const sample = await sandbox.cgroup.sample();
    const now = process.hrtime.bigint();
    const mark = this.cpuMarks.get(sandbox);
    this.cpuMarks.set(sandbox, { usageNs: sample.cpuUsageNs, atNs: now });
    const { cpuCount } = sandbox.record.limits;
    const cpuUsedPct = mark
      ? Math.min(100, Math.max(0, ((sample.cpuUsageNs - mark.usageNs) / Number(now - mark.atNs) / cpuCount) * 100))
      : 0;
    return {
      timestamp: new Date(),
      cpuCount,
      cpuUsedPct: Math.round(cpuUsedPct * 100) / 100,
      memUsed: sample.memoryUsedBytes,
      memTotal: Math.min(sample.memoryLimitBytes, sandbox.record.limits.memoryMB * 1024 * 1024),
      memCache: sample.memoryCacheBytes,
      diskUsed: await this.diskUsed(sandbox, signal),
      diskTotal: sandbox.record.limits.diskMB * 1024 * 1024,
      ...(await this.diskLimitUsed(sandbox, signal)),
      oomKills: sample.oomKills,
    };
  }

  /** A halted (filesystem-paused) sandbox: no CPU, no memory, its files. */
  async halted(sandbox: HostedSandbox, signal?: AbortSignal): Promise<SandboxMetricSample> {
    const { limits } = sandbox.record;
    return {
      timestamp: new Date(),
      cpuCount: limits.cpuCount,
      cpuUsedPct: 0,
      memUsed: 0,
      memTotal: limits.memoryMB * 1024 * 1024,
      memCache: 0,
      diskUsed: await this.diskUsed(sandbox, signal),
      diskTotal: limits.diskMB * 1024 * 1024,
      ...(await this.diskLimitUsed(sandbox, signal)),
    };
  }

  /** The sandbox was frozen or thawed: its next sample starts a new CPU interval. */
  restartCpu(sandbox: HostedSandbox): void {
    this.cpuMarks.delete(sandbox);
  }

  /** Not cached like du: a full disk is what alerts watch for, and the listing is cheap and shared. */
  private async diskLimitUsed(sandbox: HostedSandbox, signal?: AbortSignal): Promise<{ diskLimitUsed?: number }> {
    const bytes = await this.limitUsage?.(sandbox.dir, signal).catch(() => undefined);
    return bytes === undefined ? {} : { diskLimitUsed: bytes };
  }

  private async diskUsed(sandbox: HostedSandbox, signal?: AbortSignal): Promise<number> {
    const cached = this.diskUsage.get(sandbox);
    if (cached && Date.now() - cached.at < DISK_USAGE_TTL_MS) return cached.bytes;
    const bytes = await diskUsageBytes(`${sandbox.dir}/upper`, signal);
    this.diskUsage.set(sandbox, { bytes, at: Date.now() });
    return bytes;
  }
}
