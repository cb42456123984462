// Pauses, resumes and snapshots of one sandbox run one after another, each once the one before it has settled; a
// kill waits for the one under way, so that nothing freezes or thaws a cgroup being torn down.
import { toRecord, type LiveSandboxes } from "./live-sandboxes.js";
import type { SandboxRecord } from "./orchestrator-api.js";
import type { HostedSandbox } from "./sandbox-host.js";

export class SandboxOpQueue {
  /** The operation in progress per sandbox (a promise that never rejects). */
  private readonly pending = new Map<string, Promise<void>>();

  constructor(private readonly live: LiveSandboxes) {}

  /**
   * Run `op` on a sandbox after any earlier operation on it has settled. Resolves the sandbox's record afterwards,
   * or undefined when the sandbox is unknown (or was killed meanwhile).
   */
  run(sandboxId: string, op: (sandbox: HostedSandbox) => Promise<void>): Promise<SandboxRecord | undefined> {
    const run = async (): Promise<SandboxRecord | undefined> => {
      const sandbox = this.live.get(sandboxId);
      if (!sandbox) return undefined;
      await op(sandbox);
      return this.live.get(sandboxId) === sandbox ? toRecord(sandbox) : undefined;
    };
    const result = (this.pending.get(sandboxId) ?? Promise.resolve()).then(run);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.pending.set(sandboxId, settled);
    void settled.then(() => {
      if (this.pending.get(sandboxId) === settled) this.pending.delete(sandboxId);
    });
    return result;
  }

  /** Settles when the operation under way on the sandbox has (undefined when none is). */
  idle(sandboxId: string): Promise<void> | undefined {
    return this.pending.get(sandboxId);
  }
}
