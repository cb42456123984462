// disk_quota: the kernel announces nothing when a sandbox's writes start failing with EDQUOT, so this reads the
// metric samples: a sandbox's disk, or a volume it mounts, is full when what its limit counts (btrfs referenced
// bytes: `diskLimitUsed`, `volumeLimits`) is within fullSlack of the limit (EDQUOT leaves it 16–80 KiB short on these
// kernels), and one alert is raised per episode: the next needs the usage to fall below REARM_FRACTION of the limit
// first. A volume is one episode whichever sandboxes see it; its alert goes to the volume's team.
import type { SandboxMetricSample } from "@burrow/orchestrator";
import type { RaiseAlert } from "./alert-kinds.js";

const MIB = 1024 * 1024;
/** Full: at most this far below the limit (1 MiB, or 1 % of large limits). */
const fullSlack = (limit: number) => Math.max(MIB, limit / 100);
const REARM_FRACTION = 0.9;

export class DiskQuotaWatch {
  /** Sandbox ids and `volume:<id>` keys in a full episode. */
  readonly #full = new Set<string>();
  constructor(
    private readonly raise: RaiseAlert,
    private readonly volumeTeam: (volumeId: string) => string | undefined,
  ) {}

  onSample(sandboxId: string, sample: SandboxMetricSample): void {
    if (sample.diskLimitUsed !== undefined && this.#episode(sandboxId, sample.diskLimitUsed, sample.diskTotal)) {
      this.raise("disk_quota", `sandbox ${sandboxId} reached its disk limit of ${Math.round(sample.diskTotal / MIB)} MiB: writes fail`, {
        usedBytes: sample.diskLimitUsed,
        limitBytes: sample.diskTotal,
      }, { sandboxId });
    }
    for (const { volumeId, usedBytes, limitBytes } of sample.volumeLimits ?? []) {
      if (!this.#episode(`volume:${volumeId}`, usedBytes, limitBytes)) continue;
      this.raise("disk_quota", `volume ${volumeId} reached its size limit of ${Math.round(limitBytes / MIB)} MiB: writes fail`, {
        volumeId,
        usedBytes,
        limitBytes,
      }, { teamId: this.volumeTeam(volumeId) });
    }
  }

  forget(sandboxId: string): void {
    this.#full.delete(sandboxId);
  }

  /** Whether this reading starts a full episode of `key`. */
  #episode(key: string, used: number, limit: number): boolean {
    if (!(limit > 0)) return false;
    if (this.#full.has(key)) {
      if (used < limit * REARM_FRACTION) this.#full.delete(key);
      return false;
    }
    if (used < limit - fullSlack(limit)) return false;
    this.#full.add(key);
    return true;
  }
}
