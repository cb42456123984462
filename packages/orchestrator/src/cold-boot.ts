// The two halves of a filesystem pause and of anything else that restarts a sandbox on its files (rollback):
// halt ends the sandbox's processes and gives back what they held (memory, cgroups, veth, namespace owner) while
// its directory, record and address lease stay; boot launches it again on the same writable layer and address,
// with a new boot id, and hands envd the same /init as the create did, then runs the template's start command.
// Callers run both inside the sandbox's operation queue (sandbox-op-queue.ts).
import { BurrowError, Code } from "@burrow/protocol";
import { envdAt, initEnvd } from "./envd-client/index.js";
import type { Logger } from "./logger.js";
import type { HostedSandbox, SandboxHost } from "./sandbox-host.js";
import { writeRecord, type SandboxRecordFile } from "./sandbox-record.js";
import { startTemplateProcess } from "./templates/start-template-process.js";

export interface ColdBootDeps {
  host: SandboxHost;
  logger: Logger;
}

export class ColdBoot {
  constructor(private readonly deps: ColdBootDeps) {}

  /**
   * End every process of the sandbox and release its cgroups and veth; its files, record and address lease stay.
   * The record says "paused, filesystem" before anything is killed (keeping the time of an earlier pause), so a
   * crash in between leaves a filesystem-paused sandbox for the next start, never a dead one; a caller that boots
   * it again right after (rollback) gets it back as running from boot.
   */
  async halt(sandbox: HostedSandbox, signal?: AbortSignal): Promise<void> {
    const { record } = sandbox;
    if (!record.boot) {
      throw new BurrowError(Code.FailedPrecondition, `sandbox ${record.sandboxId} was created before cold boots existed and cannot be halted`, {
        reason: "boot_unsupported",
      });
    }
    const since = record.state === "paused" && record.pause ? record.pause.since : new Date().toISOString();
    await update(sandbox, { ...record, state: "paused", pause: { kind: "filesystem", since } });
    try {
      await this.deps.host.halt(sandbox, signal);
    } catch (error) {
      // Recorded as halted already: a retry (or the next start) finishes the job; nothing half-runs meanwhile
      // that the control plane believes paused, since whatever survived is killed again then.
      throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${record.sandboxId} could not be halted: ${(error as Error).message}`, {
        reason: "halt_failed",
        cause: error,
      });
    }
  }

  /**
   * Launch a halted sandbox again: same directory, writable layer, address, envd token and env vars, a new boot id;
   * the template's start command and ready check run again. Resolves once they have; the record then says
   * running. On failure the sandbox is halted again and stays filesystem-paused.
   */
  async boot(sandbox: HostedSandbox, signal?: AbortSignal): Promise<void> {
    const spec = sandbox.record.boot;
    const { sandboxId } = sandbox.record;
    if (!spec) {
      throw new BurrowError(Code.FailedPrecondition, `sandbox ${sandboxId} was created before cold boots existed and cannot be booted`, {
        reason: "boot_unsupported",
      });
    }
    const started = performance.now();
    try {
      await this.deps.host.relaunch(sandbox, spec.layers, signal);
      const { record } = sandbox;
      const runtime = spec.runtime;
      await initEnvd(
        envdAt(record.ip, record.initToken),
        {
          envVars: { ...runtime?.env, ...spec.envVars },
          accessToken: spec.accessToken,
          defaultUser: runtime?.user ?? "user",
          defaultWorkdir: runtime?.workdir ?? "/home/user",
        },
        signal,
      );
      await startTemplateProcess(envdAt(record.ip, spec.accessToken), { runtime }, { signal });
    } catch (error) {
      await this.deps.host.halt(sandbox).catch((haltError: unknown) =>
        this.deps.logger.error({ sandboxId, err: haltError }, "could not halt a sandbox whose boot failed"),
      );
      this.deps.logger.warn({ sandboxId, err: error }, "cold boot failed; the sandbox stays paused");
      throw error;
    }
    const { pause: _pause, ...booted } = sandbox.record;
    await update(sandbox, { ...booted, state: "running" });
    this.deps.logger.debug({ sandboxId, bootMs: Math.round(performance.now() - started) }, "sandbox booted");
  }
}

async function update(sandbox: HostedSandbox, record: SandboxRecordFile): Promise<void> {
  await writeRecord(sandbox.dir, record);
  sandbox.record = record;
}
