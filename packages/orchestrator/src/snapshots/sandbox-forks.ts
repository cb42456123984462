// Forks: a sandbox is snapshotted once (a hidden snapshot, no template of its own) and `count` sandboxes start from
// it with the source's files, limits, network setting (internet switch and allowOut/denyOut) and env vars. The snapshot's layer stays while its forks run,
// and so does its charge to the owner, until the last of them ends.
import { BurrowError, Code } from "@burrow/protocol";
import type { LiveSandboxes } from "../live-sandboxes.js";
import type { Logger } from "../logger.js";
import { copyEgressRules } from "../network/egress-rules.js";
import type { CreateSandboxOptions, ForkResult, ForkSandboxOptions, SandboxRecord } from "../orchestrator-api.js";
import { shareSignal } from "../shared-signal.js";
import type { SnapshotCharges } from "./snapshot-charges.js";
import type { SandboxSnapshots } from "./sandbox-snapshots.js";

/** Most forks one request may ask for. */
const MAX_FORKS = 20;

export interface SandboxForksDeps {
  live: LiveSandboxes;
  snapshots: SandboxSnapshots;
  charges: SnapshotCharges;
  /** Creates each fork, as the control plane's creates are. */
  createSandbox: (opts: CreateSandboxOptions) => Promise<SandboxRecord>;
  /** Deletes the hidden snapshot once its forks started (as a template is deleted: its layers stay while used). */
  deleteTemplate: (templateId: string) => Promise<unknown>;
  logger: Logger;
}

export class SandboxForks {
  constructor(private readonly deps: SandboxForksDeps) {}

  async fork(sandboxId: string, opts: ForkSandboxOptions): Promise<ForkResult[] | undefined> {
    const { live, logger } = this.deps;
    const { count } = opts;
    if (!Number.isInteger(count) || count < 1 || count > MAX_FORKS) {
      throw new BurrowError(Code.InvalidArgument, `count must be an integer between 1 and ${MAX_FORKS}, got ${String(count)}`, {
        reason: "invalid_fork_count",
      });
    }
    const manifest = await this.deps.snapshots.take(sandboxId, undefined, sandboxId, opts.quota, opts.signal);
    if (!manifest) return undefined;
    let started = false;
    const source = live.get(sandboxId);
    const envVars = live.source(sandboxId)?.envVars ?? {};
    const allowInternetAccess = source?.record.allowInternetAccess ?? true;
    // A fork of a restricted sandbox is restricted alike: its rules are in place before it is handed out.
    const egress = source?.record.egress;
    const shared = shareSignal(opts.signal);
    try {
      const settled = await Promise.allSettled(
        Array.from({ length: count }, async (_, index) => {
          const fork = opts.forkOptions(index);
          return this.deps.createSandbox({
            template: manifest.templateId,
            allowInternetAccess,
            ...(egress ? { egress: copyEgressRules(egress) } : {}),
            envVars: { ...envVars, ...fork.envVars },
            envdAccessToken: fork.envdAccessToken,
            inBurst: count > 1,
            ...(shared.signal ? { signal: shared.signal } : {}),
          });
        }),
      );
      started = settled.some((result) => result.status === "fulfilled");
      return settled.map((result): ForkResult =>
        result.status === "fulfilled"
          ? { sandbox: result.value }
          : { error: result.reason instanceof Error ? result.reason : new Error(String(result.reason)) },
      );
    } finally {
      shared.release();
      // Its layer stays while forks run: so does its charge, until the last of them ends. And the fork's snapshot is
      // no template of its own: deleted like one, its layers stay while forks run. Independent: done together.
      const charged =
        started && manifest.owner !== undefined && manifest.sizeBytes !== undefined
          ? this.deps.charges
              .chargeForkBase(manifest.templateId, manifest.owner, manifest.sizeBytes)
              .then(() => this.releaseForkBases())
              .catch((error: unknown) => logger.warn({ sandboxId, err: error }, "could not record a fork's snapshot charge"))
          : undefined;
      const deleted = this.deps
        .deleteTemplate(manifest.templateId)
        .catch((error: unknown) => logger.warn({ sandboxId, err: error }, "could not delete a fork's snapshot"));
      await Promise.all([charged, deleted]);
    }
  }

  /** End the charges of fork snapshots whose forks have all ended. */
  async releaseForkBases(): Promise<void> {
    await this.deps.charges
      .releaseForkBases((templateId) => this.deps.live.usesTemplate(templateId))
      .catch((error: unknown) => this.deps.logger.warn({ err: error }, "could not update the snapshot charges ledger"));
  }
}
