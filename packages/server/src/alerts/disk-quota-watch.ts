// disk_quota: the kernel announces nothing when a sandbox's writes start failing with EDQUOT, so this reads the
// metric samples: a sandbox is full when what its disk limit counts (btrfs referenced bytes, `diskLimitUsed`) is
// within FULL_SLACK of the limit (EDQUOT leaves it 16–80 KiB short on these kernels), and one alert is raised per
// episode: the next needs the usage to fall below REARM_FRACTION of the limit first.
import type { SandboxMetricSample } from "@burrow/orchestrator";
import type { RaiseAlert } from "./alert-kinds.js";

const MIB = 1024 * 1024;
/** Full: at most this far below the limit (1 MiB, or 1 % of large limits). */
const fullSlack = (limit: number) => Math.max(MIB, limit / 100);
const REARM_FRACTION = 0.9;

export class DiskQuotaWatch {
  readonly #full = new Set<string>();
  constructor(private readonly raise: RaiseAlert) {}

  onSample(sandboxId: string, sample: SandboxMetricSample): void {
    const used = sample.diskLimitUsed;
    const limit = sample.diskTotal;
    if (used === undefined || !(limit > 0)) return;
    if (this.#full.has(sandboxId)) {
      if (used < limit * REARM_FRACTION) this.#full.delete(sandboxId);
      return;
    }
    if (used < limit - fullSlack(limit)) return;
    this.#full.add(sandboxId);
    this.raise("disk_quota", `sandbox ${sandboxId} reached its disk limit of ${Math.round(limit / MIB)} MiB: writes fail`, {
      usedBytes: used,
      limitBytes: limit,
    }, { sandboxId });
  }

  forget(sandboxId: string): void {
    this.#full.delete(sandboxId);
  }
}
