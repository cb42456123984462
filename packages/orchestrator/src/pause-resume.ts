// Pause and resume: a paused sandbox's processes are frozen where they are (the cgroup freezer) with their memory,
// its address and writable layer stay. Its record says "paused" for as long as it may be frozen, so that a restart
// brings the freezer in line with the record (adopt-or-reap.ts).
import { BurrowError, Code } from "@burrow/protocol";
import type { Logger } from "./logger.js";
import type { MetricsSampler } from "./metrics-sampler.js";
import type { SandboxRecord } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";
import type { SandboxOpQueue } from "./sandbox-op-queue.js";
import { writeRecord } from "./sandbox-record.js";

export interface PauseResumeDeps {
  ops: SandboxOpQueue;
  metrics: MetricsSampler;
  logger: Logger;
}

export class PauseResume {
  constructor(private readonly deps: PauseResumeDeps) {}

  /** Freeze the sandbox (in line with its other pauses, resumes and snapshots); a paused one stays as it is. */
  pause(sandboxId: string, signal?: AbortSignal): Promise<SandboxRecord | undefined> {
    const { logger } = this.deps;
    return this.deps.ops.run(sandboxId, async (sandbox) => {
      if (sandbox.record.state === "paused") return;
      // The record says paused before the freeze: a restart in between freezes it again (adoptOrReap).
      await writeState(sandbox, "paused");
      try {
        await sandbox.cgroup.freeze(signal);
      } catch (error) {
        // Never leave a partly frozen sandbox behind: back to running, as if the pause had not been asked for.
        await sandbox.cgroup.thaw().catch((thawError: unknown) => logger.error({ sandboxId, err: thawError }, "thaw after failed pause failed"));
        await writeState(sandbox, "running").catch(() => undefined);
        throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be paused: ${(error as Error).message}`, {
          reason: "pause_failed",
          cause: error,
        });
      }
      this.deps.metrics.restartCpu(sandbox);
      logger.info({ sandboxId }, "sandbox paused");
    });
  }

  /** Thaw a paused sandbox where it stopped; a running one stays as it is. */
  resume(sandboxId: string, signal?: AbortSignal): Promise<SandboxRecord | undefined> {
    return this.deps.ops.run(sandboxId, async (sandbox) => {
      if (sandbox.record.state !== "paused") return;
      try {
        await sandbox.cgroup.thaw(signal);
      } catch (error) {
        throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be resumed: ${(error as Error).message}`, {
          reason: "resume_failed",
          cause: error,
        });
      }
      // Written after the thaw: a restart in between finds "paused" and freezes it again, which is what the
      // control plane (which records "running" only after this returns) still believes.
      await writeState(sandbox, "running");
      this.deps.metrics.restartCpu(sandbox);
      this.deps.logger.info({ sandboxId }, "sandbox resumed");
    });
  }
}

async function writeState(sandbox: HostedSandbox, state: "running" | "paused"): Promise<void> {
  const record = { ...sandbox.record, state };
  await writeRecord(sandbox.dir, record);
  sandbox.record = record;
}
