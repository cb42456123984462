// Pause and resume. A memory pause freezes the sandbox's processes where they are (the cgroup freezer), with their
// memory, network namespace and cgroups; its record says "paused" for as long as it may be frozen, so that a restart
// brings the freezer in line with the record (adopt-or-reap.ts). A filesystem pause halts the sandbox (cold-boot.ts):
// processes end, only its files and address stay, and resume cold-boots it. A memory pause older than
// memoryPauseMaxAgeMs becomes a filesystem pause (convertAged, run periodically), announced as a lifecycle event.
import { BurrowError, Code } from "@burrow/protocol";
import type { ColdBoot } from "./cold-boot.js";
import type { LiveSandboxes } from "./live-sandboxes.js";
import type { Logger } from "./logger.js";
import type { MetricsSampler } from "./metrics-sampler.js";
import type { SandboxRecord } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";
import type { SandboxOpQueue } from "./sandbox-op-queue.js";
import { pauseKindOf, writeRecord, type SandboxRecordFile } from "./sandbox-record.js";

export interface PauseResumeDeps {
  ops: SandboxOpQueue;
  metrics: MetricsSampler;
  coldBoot: ColdBoot;
  live: LiveSandboxes;
  /** Age past which a memory pause becomes a filesystem pause. */
  memoryPauseMaxAgeMs: number;
  logger: Logger;
}

/** Longest wait between two looks for memory pauses past their age (shorter when the age limit is). */
const MAX_CHECK_INTERVAL_MS = 60_000;
const MIN_CHECK_INTERVAL_MS = 100;

export class PauseResume {
  private timer: NodeJS.Timeout | undefined;
  private converting: Promise<void> | undefined;

  constructor(private readonly deps: PauseResumeDeps) {}

  /**
   * Pause the sandbox (in line with its other pauses, resumes and snapshots). With memory: frozen; a paused one
   * stays as it is. Without: halted; a memory-paused one is converted, a filesystem-paused one stays.
   */
  pause(sandboxId: string, opts: { memory?: boolean | undefined; signal?: AbortSignal | undefined } = {}): Promise<SandboxRecord | undefined> {
    const { signal } = opts;
    return this.deps.ops.run(sandboxId, async (sandbox) => {
      const kind = pauseKindOf(sandbox.record);
      if (opts.memory === false) {
        if (kind === "filesystem") return;
        await this.deps.coldBoot.halt(sandbox, signal);
        this.deps.metrics.restartCpu(sandbox);
        this.deps.logger.info({ sandboxId, from: kind ?? "running" }, "sandbox paused (filesystem)");
        return;
      }
      if (kind !== undefined) return;
      await this.freeze(sandbox, signal);
    });
  }

  /**
   * Resume a paused sandbox; a running one stays as it is. A memory pause is thawed where it stopped (with
   * `memory: false` it is halted and cold-booted instead); a filesystem pause is cold-booted.
   */
  resume(sandboxId: string, opts: { memory?: boolean | undefined; signal?: AbortSignal | undefined } = {}): Promise<SandboxRecord | undefined> {
    const { signal } = opts;
    return this.deps.ops.run(sandboxId, async (sandbox) => {
      const kind = pauseKindOf(sandbox.record);
      if (kind === undefined) return;
      if (kind === "memory" && opts.memory !== false) {
        await this.thaw(sandbox, signal);
        return;
      }
      if (kind === "memory") await this.deps.coldBoot.halt(sandbox, signal);
      await this.deps.coldBoot.boot(sandbox, signal);
      this.deps.metrics.restartCpu(sandbox);
      this.deps.logger.info({ sandboxId, bootId: sandbox.record.bootId }, "sandbox resumed (cold boot)");
    });
  }

  /** Look for memory pauses past their age now and then, from now on. */
  start(): void {
    const interval = Math.max(MIN_CHECK_INTERVAL_MS, Math.min(MAX_CHECK_INTERVAL_MS, Math.floor(this.deps.memoryPauseMaxAgeMs / 2)));
    this.timer = setInterval(() => void this.convertAged(), interval);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Turn every memory pause older than the limit into a filesystem pause (one pass at a time). */
  convertAged(now = Date.now()): Promise<void> {
    this.converting ??= (async () => {
      for (const [sandboxId, sandbox] of this.deps.live.entries()) {
        if (!isAged(sandbox.record, now, this.deps.memoryPauseMaxAgeMs)) continue;
        await this.deps.ops
          .run(sandboxId, async (current) => {
            // Looked at again in line: a resume or a kill may have come first.
            if (!isAged(current.record, Date.now(), this.deps.memoryPauseMaxAgeMs)) return;
            await this.deps.coldBoot.halt(current);
            this.deps.metrics.restartCpu(current);
            this.deps.logger.info({ sandboxId, reason: "age", pausedSince: current.record.pause?.since }, "memory pause converted to a filesystem pause");
            this.deps.live.emitLifecycleEvent({ type: "pause_converted", sandboxId, from: "memory", to: "filesystem", reason: "age", at: new Date() });
          })
          .catch((error: unknown) => this.deps.logger.error({ sandboxId, err: error }, "could not convert an aged memory pause"));
      }
    })().finally(() => (this.converting = undefined));
    return this.converting;
  }

  private async freeze(sandbox: HostedSandbox, signal: AbortSignal | undefined): Promise<void> {
    const { logger } = this.deps;
    const { sandboxId } = sandbox.record;
    // The record says paused before the freeze: a restart in between freezes it again (adoptOrReap).
    await update(sandbox, { ...sandbox.record, state: "paused", pause: { kind: "memory", since: new Date().toISOString() } });
    try {
      await sandbox.cgroup.freeze(signal);
    } catch (error) {
      // Never leave a partly frozen sandbox behind: back to running, as if the pause had not been asked for.
      await sandbox.cgroup.thaw().catch((thawError: unknown) => logger.error({ sandboxId, err: thawError }, "thaw after failed pause failed"));
      await update(sandbox, running(sandbox.record)).catch(() => undefined);
      throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be paused: ${(error as Error).message}`, {
        reason: "pause_failed",
        cause: error,
      });
    }
    this.deps.metrics.restartCpu(sandbox);
    logger.info({ sandboxId }, "sandbox paused");
  }

  private async thaw(sandbox: HostedSandbox, signal: AbortSignal | undefined): Promise<void> {
    const { sandboxId } = sandbox.record;
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
    await update(sandbox, running(sandbox.record));
    this.deps.metrics.restartCpu(sandbox);
    this.deps.logger.info({ sandboxId }, "sandbox resumed");
  }
}

function isAged(record: SandboxRecordFile, now: number, maxAgeMs: number): boolean {
  // A record from before cold boots cannot be halted and booted again: it stays a memory pause.
  if (pauseKindOf(record) !== "memory" || !record.boot) return false;
  const since = Date.parse(record.pause?.since ?? record.startedAt);
  return !(now - since < maxAgeMs);
}

function running(record: SandboxRecordFile): SandboxRecordFile {
  const { pause: _pause, ...rest } = record;
  return { ...rest, state: "running" };
}

async function update(sandbox: HostedSandbox, record: SandboxRecordFile): Promise<void> {
  await writeRecord(sandbox.dir, record);
  sandbox.record = record;
}
