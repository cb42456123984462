// Creates and forks record their owner before they answer: the orchestrator's createSandbox and forkSandbox, wrapped
// so that each new sandbox's ownership record is written (revision-checked) before the call returns to the API, hence
// before any client can address the sandbox through another node. A record of another node under the same id (ids are random, so only a
// bug or a replayed state directory makes one) fails the create and the sandbox is killed.
import type { BranchCheckpointOptions, CreateSandboxOptions, ForkResult, ForkSandboxOptions, Orchestrator, SandboxRecord } from "@burrow/orchestrator";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxOwners } from "./sandbox-owners.js";

/**
 * `cordoned`: whether this node is cordoned now. A cordoned node makes no new sandbox by any path — creates (refused
 * earlier by placement too), forks, checkpoint branches, creates from snapshots — so that a drain ends; resuming its
 * own paused sandboxes is not a new sandbox and stays allowed.
 */
export function ownedOrchestrator(
  orchestrator: Orchestrator,
  owners: SandboxOwners,
  logger: Logger,
  cordoned: () => string | undefined = () => undefined,
  beforeResume: (sandboxId: string) => Promise<void> = async () => undefined,
): Orchestrator {
  const refuseWhenCordoned = () => {
    const node = cordoned();
    if (node !== undefined) throw new BurrowError(Code.Unavailable, `node ${node} is cordoned: it takes no new sandboxes`, { reason: "node_cordoned" });
  };
  const createSandbox = async (opts: CreateSandboxOptions): Promise<SandboxRecord> => {
    refuseWhenCordoned();
    const record = await orchestrator.createSandbox(opts);
    try {
      await owners.claimNew(record.sandboxId, record.templateId);
    } catch (err) {
      await orchestrator.killSandbox(record.sandboxId).catch((killErr: unknown) => logger.error({ err: killErr, sandboxId: record.sandboxId }, "could not kill an unowned sandbox"));
      throw err;
    }
    return record;
  };
  const fork = orchestrator.forkSandbox?.bind(orchestrator);
  // Each fork succeeds or fails on its own: a child whose record cannot be written becomes a failed fork.
  const forkSandbox = async (sandboxId: string, opts: ForkSandboxOptions): Promise<ForkResult[] | undefined> => {
    refuseWhenCordoned();
    const results = await fork!(sandboxId, opts);
    if (!results) return results;
    return Promise.all(
      results.map(async (result): Promise<ForkResult> => {
        if (!result.sandbox) return result;
        try {
          await owners.claimNew(result.sandbox.sandboxId, result.sandbox.templateId);
          return result;
        } catch (err) {
          await orchestrator.killSandbox(result.sandbox.sandboxId).catch((killErr: unknown) => logger.error({ err: killErr, sandboxId: result.sandbox.sandboxId }, "could not kill an unowned fork"));
          return { error: err instanceof Error ? err : new Error(String(err)) };
        }
      }),
    );
  };
  const branch = orchestrator.branchCheckpoint?.bind(orchestrator);
  // Branch children are claimed from their `created` events (ownership-sync.ts); here only the cordon is checked.
  const branchCheckpoint = async (checkpointId: string, opts: BranchCheckpointOptions): Promise<ForkResult[] | undefined> => {
    refuseWhenCordoned();
    return branch!(checkpointId, opts);
  };
  const resume = orchestrator.resumeSandbox?.bind(orchestrator);
  // A published filesystem pause stops being movable before it boots here (sandbox-moves.ts), and one another node
  // took over meanwhile is not booted here.
  const resumeSandbox: Orchestrator["resumeSandbox"] = async (sandboxId, opts) => {
    await beforeResume(sandboxId);
    return resume!(sandboxId, opts);
  };
  return new Proxy(orchestrator, {
    get(target, prop, receiver) {
      if (prop === "createSandbox") return createSandbox;
      if (prop === "resumeSandbox") return resume ? resumeSandbox : undefined;
      if (prop === "forkSandbox") return fork ? forkSandbox : undefined;
      if (prop === "branchCheckpoint") return branch ? branchCheckpoint : undefined;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
