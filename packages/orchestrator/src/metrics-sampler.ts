// Metrics of a sandbox, sampled when asked: CPU use since its previous sample (cgroup CPU time over wall time, per
// core of its limit), memory from its cgroups, disk from its writable layer (cached a while: du walks the tree).
import { diskUsageBytes } from "./disk-usage.js";
import type { SandboxMetricSample } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";
import type { LimitUsage } from "./storage/disk-storage.js";

const DISK_USAGE_TTL_MS = 30_000;

interface CpuMark {
  usageNs: number;
  atNs: bigint;
}

export interface MetricsSamplerDeps {
  /** What a writable dir's or volume's disk limit counts, and the limit (SandboxStorage.limitUsage). */
  limitUsage: (dir: string, signal?: AbortSignal) => Promise<LimitUsage | undefined>;
  /** A volume's host directory. */
  volumeDir: (volumeId: string) => string;
}

export class MetricsSampler {
  constructor(private readonly deps?: MetricsSamplerDeps) {}

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

  /**
   * The sandbox's and its volumes' use of their disk limits. Not cached like du: a full disk is what alerts watch
   * for, and the listing is cheap and shared.
   */
  private async diskLimitUsed(sandbox: HostedSandbox, signal?: AbortSignal): Promise<Pick<SandboxMetricSample, "diskLimitUsed" | "volumeLimits">> {
    const deps = this.deps;
    if (!deps) return {};
    const usage = (dir: string) => deps.limitUsage(dir, signal).catch(() => undefined);
    const own = await usage(sandbox.dir);
    const volumeLimits: NonNullable<SandboxMetricSample["volumeLimits"]> = [];
    for (const { volumeId } of sandbox.record.volumes ?? []) {
      const used = await usage(deps.volumeDir(volumeId));
      if (used) volumeLimits.push({ volumeId, ...used });
    }
    return { ...(own ? { diskLimitUsed: own.usedBytes } : {}), ...(volumeLimits.length ? { volumeLimits } : {}) };
  }

  private async diskUsed(sandbox: HostedSandbox, signal?: AbortSignal): Promise<number> {
    const cached = this.diskUsage.get(sandbox);
    if (cached && Date.now() - cached.at < DISK_USAGE_TTL_MS) return cached.bytes;
    const bytes = await diskUsageBytes(`${sandbox.dir}/upper`, signal);
    this.diskUsage.set(sandbox, { bytes, at: Date.now() });
    return bytes;
  }
}
