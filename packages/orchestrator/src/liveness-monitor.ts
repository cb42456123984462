// Notices sandboxes whose init has exited and removes them (their exit is reported as "crashed"), and now and then
// retries removing directories of ended sandboxes that would not go.
import { isSandboxInitAlive } from "./launcher/index.js";
import type { LiveSandboxes } from "./live-sandboxes.js";
import type { Logger } from "./logger.js";
import type { SandboxHost } from "./sandbox-host.js";

const LIVENESS_INTERVAL_MS = 1000;
const REMOVAL_RETRY_INTERVAL_MS = 60_000;

export interface LivenessMonitorDeps {
  live: LiveSandboxes;
  host: SandboxHost;
  logger: Logger;
}

export class LivenessMonitor {
  private timer: NodeJS.Timeout | undefined;
  /** When the last retry of removing directories of ended sandboxes began (ms since the epoch). */
  private removalRetriedAt = 0;

  constructor(private readonly deps: LivenessMonitorDeps) {}

  start(): void {
    this.timer = setInterval(() => this.check(), LIVENESS_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private check(): void {
    const { live, host, logger } = this.deps;
    for (const [sandboxId, sandbox] of live.entries()) {
      // A frozen (paused) init is alive: frozen tasks keep their pid and start time and are never zombies. A halted
      // (filesystem-paused) sandbox has no init on purpose.
      if (sandbox.record.state === "paused" && sandbox.record.pause?.kind === "filesystem") continue;
      if (isSandboxInitAlive(sandbox.record.pid, sandbox.record.pidStartTime)) continue;
      logger.warn({ sandboxId }, "sandbox init exited; removing the sandbox");
      live.delete(sandboxId);
      void host
        .destroy(sandbox)
        .catch((error: unknown) => logger.error({ sandboxId, err: error }, "cleanup of exited sandbox failed"))
        .finally(() => live.emitExit(sandboxId, "crashed"));
    }
    // Directories of ended sandboxes that could not be removed are tried again now and then.
    if (host.pendingRemovals > 0 && Date.now() - this.removalRetriedAt >= REMOVAL_RETRY_INTERVAL_MS) {
      this.removalRetriedAt = Date.now();
      void host.retryRemovals();
    }
  }
}
