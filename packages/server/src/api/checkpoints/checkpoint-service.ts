// Checkpoint trees as the control plane offers them: the orchestrator keeps the checkpoints (files only, no process
// memory), this checks the sandboxes against the store, charges checkpoints to the sandbox's owner (the snapshot
// quota), registers branch children like created sandboxes, and publishes checkpoint events on the bus.
import type { Bus } from "@burrow/bus";
import type { CheckpointInfo, CheckpointTree, Orchestrator } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import type { Logger } from "pino";
import type { ServerConfig } from "../../config.js";
import { publishCheckpointEvent, type CheckpointBusEvent } from "../../bus/lifecycle-publisher.js";
import { toE2bError } from "../../errors.js";
import type { SandboxService } from "../../lifecycle/sandbox-service.js";
import { copiedNetwork, egressConfigOf, hasEgressRules, type EgressConfig, type SandboxNetworkConfig } from "../../network/network-config.js";
import type { SandboxNetworkStore } from "../../store/sandbox-networks.js";
import type { SandboxRow } from "../../store/sandboxes.js";

/** Most children one branch request may ask for (as many as a fork). */
export const MAX_BRANCH_COUNT = 20;

export interface CheckpointServiceDeps {
  config: ServerConfig;
  orchestrator: Orchestrator;
  sandboxes: SandboxService;
  bus?: Bus | undefined;
  logger: Logger;
  /** Network configs: a child copies its checkpoint's sandbox's (the egress kept when it was taken, its ingress). */
  networks?: SandboxNetworkStore;
  /** On a node of a cluster: where each checkpoint is, for the other nodes to forward to (cluster/checkpoint-records.ts). */
  records?: CheckpointLocations | undefined;
}

/** Told of each checkpoint taken and deleted here; a failure is logged, the checkpoint stays as it is. */
export interface CheckpointLocations {
  taken(checkpointId: string, sandboxId: string): Promise<void>;
  deleted(checkpointId: string): Promise<void>;
}

/** One child's outcome, as a fork's: the registered sandbox, or why it did not start. */
export type BranchOutcome = { row: SandboxRow; error?: undefined } | { row?: undefined; error: { code: number; message: string } };

function networkOption(network: SandboxNetworkConfig | undefined): { network?: SandboxNetworkConfig } {
  return network ? { network } : {};
}

/** A checkpoint's egress without a kept copy: the orchestrator's lists, and the user's proxy of its sandbox. */
function legacyEgress(checkpoint: CheckpointInfo, source: SandboxNetworkConfig | undefined): EgressConfig {
  return {
    allowOut: [...(checkpoint.egress?.allowOut ?? [])],
    denyOut: [...(checkpoint.egress?.denyOut ?? [])],
    ...(source?.egressProxy !== undefined ? { egressProxy: source.egressProxy } : {}),
  };
}

function unsupported(): never {
  throw new BurrowError(Code.Unimplemented, "checkpoints are not supported by this orchestrator");
}

function checkpointNotFound(checkpointId: string): BurrowError {
  return new BurrowError(Code.NotFound, `checkpoint "${checkpointId}" doesn't exist`, { reason: "checkpoint_not_found" });
}

export class CheckpointService {
  constructor(private readonly deps: CheckpointServiceDeps) {}

  async create(sandboxId: string, label: string | undefined): Promise<CheckpointInfo> {
    const { orchestrator, sandboxes } = this.deps;
    const row = sandboxes.require(sandboxId);
    if (!orchestrator.checkpointSandbox) unsupported();
    const info = await orchestrator.checkpointSandbox(sandboxId, {
      ...(label !== undefined ? { label } : {}),
      quota: sandboxes.snapshotQuotaOf(row),
    });
    if (!info) throw sandboxNotFound(sandboxId);
    // Its children get the network the sandbox has now (header transforms and user's proxy too), whatever it has later.
    const network = this.deps.networks?.get(sandboxId);
    if (network && hasEgressRules(network)) this.deps.networks?.keepCopy(info.checkpointId, egressConfigOf(network));
    await this.deps.records?.taken(info.checkpointId, sandboxId).catch((err: unknown) => this.deps.logger.warn({ err, checkpointId: info.checkpointId }, "could not record where a checkpoint is"));
    this.publish({ type: "checkpoint_created", sandboxId, templateId: row.templateId, metadata: row.metadata, checkpointId: info.checkpointId, parentId: info.parentId });
    return info;
  }

  /** The tree around a sandbox; also for a sandbox that has ended, as long as checkpoints of its tree remain. */
  async tree(sandboxId: string): Promise<CheckpointTree> {
    const { orchestrator } = this.deps;
    if (!orchestrator.listCheckpoints) unsupported();
    const tree = await orchestrator.listCheckpoints(sandboxId);
    if (!tree || (tree.checkpoints.length === 0 && !this.deps.sandboxes.get(sandboxId))) throw sandboxNotFound(sandboxId);
    return tree;
  }

  async get(checkpointId: string): Promise<CheckpointInfo> {
    const { orchestrator } = this.deps;
    if (!orchestrator.getCheckpoint) unsupported();
    const info = await orchestrator.getCheckpoint(checkpointId);
    if (!info) throw checkpointNotFound(checkpointId);
    return info;
  }

  /** Roll a running sandbox back in place; its id, token and address stay. */
  async rollback(sandboxId: string, checkpointId: string): Promise<SandboxRow> {
    const { orchestrator, sandboxes } = this.deps;
    const row = sandboxes.require(sandboxId);
    if (!orchestrator.rollbackSandbox) unsupported();
    if (row.state !== "running") {
      throw new BurrowError(Code.FailedPrecondition, `sandbox "${sandboxId}" is paused; resume it before rolling it back`, { reason: "sandbox_paused" });
    }
    // Requests routed to it meanwhile wait for it to run again rather than finding nobody there (sandbox-holds.ts).
    const record = await sandboxes.holds.run(sandboxId, () => orchestrator.rollbackSandbox!(sandboxId, checkpointId));
    if (!record) throw sandboxNotFound(sandboxId);
    this.deps.logger.info({ sandboxId, checkpointId }, "sandbox rolled back");
    this.publish({ type: "rolled_back", sandboxId, templateId: row.templateId, metadata: row.metadata, checkpointId });
    return row;
  }

  /**
   * Start `count` sandboxes from a checkpoint. Each is created like any sandbox (admission, its own token and
   * lifetime, registered and announced as created), with the checkpoint as its template; each succeeds or fails on
   * its own. Metadata comes from the checkpoint's sandbox while it is still known.
   */
  async branch(checkpointId: string, input: { count: number; timeoutSec?: number; apiKeyId: number | null; signal?: AbortSignal }): Promise<BranchOutcome[]> {
    const { orchestrator, sandboxes } = this.deps;
    if (!orchestrator.branchCheckpoint) unsupported();
    const checkpoint = await this.get(checkpointId);
    const source = sandboxes.get(checkpoint.sandboxId);
    // Children are restricted as the sandbox was when checkpointed (the egress kept then; the orchestrator's lists for
    // checkpoints taken before it was kept), and keep its ingress while it is known.
    const sourceNetwork = this.deps.networks?.get(checkpoint.sandboxId);
    const egress = this.deps.networks?.copyOf(checkpointId) ?? legacyEgress(checkpoint, sourceNetwork);
    const settled = await Promise.allSettled(
      Array.from({ length: input.count }, () =>
        sandboxes.create({
          template: checkpointId,
          ...(input.timeoutSec !== undefined ? { timeoutSec: input.timeoutSec } : {}),
          metadata: { ...source?.metadata },
          allowInternetAccess: checkpoint.allowInternetAccess,
          ...networkOption(copiedNetwork(sourceNetwork, egress)),
          apiKeyId: input.apiKeyId,
          ...(input.signal ? { signal: input.signal } : {}),
        }),
      ),
    );
    return settled.map((result): BranchOutcome => {
      if (result.status === "fulfilled") return { row: result.value };
      const { status, body } = toE2bError(result.reason);
      return { error: { code: status, message: body.message } };
    });
  }

  async delete(checkpointId: string, cascade: boolean): Promise<string[]> {
    const { orchestrator, sandboxes } = this.deps;
    if (!orchestrator.deleteCheckpoint) unsupported();
    const info = await this.get(checkpointId);
    // Whose each deleted checkpoint was, for the events: its tree holds every descendant.
    const byId = new Map((await orchestrator.listCheckpoints?.(info.sandboxId))?.checkpoints.map((c) => [c.checkpointId, c]));
    const deleted = await orchestrator.deleteCheckpoint(checkpointId, { cascade });
    if (!deleted) throw checkpointNotFound(checkpointId);
    for (const id of deleted) {
      this.deps.networks?.dropCopy(id);
      await this.deps.records?.deleted(id).catch((err: unknown) => this.deps.logger.warn({ err, checkpointId: id }, "could not remove where a checkpoint was"));
      const of = byId.get(id) ?? info;
      const row = sandboxes.get(of.sandboxId);
      this.publish({ type: "checkpoint_deleted", sandboxId: of.sandboxId, templateId: of.templateId, metadata: row?.metadata ?? {}, checkpointId: id });
    }
    return deleted;
  }

  private publish(event: CheckpointBusEvent): void {
    if (this.deps.bus) publishCheckpointEvent(this.deps.bus, event, this.deps.logger);
  }
}

function sandboxNotFound(sandboxId: string): BurrowError {
  return new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
}
