// Creates and forks record their owner before they answer: the orchestrator's createSandbox and forkSandbox, wrapped
// so that each new sandbox's ownership record is written (revision-checked) before the call returns to the API, hence
// before any client can address the sandbox through another node. A record of another node under the same id (ids are random, so only a
// bug or a replayed state directory makes one) fails the create and the sandbox is killed.
import type { CreateSandboxOptions, ForkResult, ForkSandboxOptions, Orchestrator, SandboxRecord } from "@burrow/orchestrator";
import type { Logger } from "pino";
import type { SandboxOwners } from "./sandbox-owners.js";

export function ownedOrchestrator(orchestrator: Orchestrator, owners: SandboxOwners, logger: Logger): Orchestrator {
  const createSandbox = async (opts: CreateSandboxOptions): Promise<SandboxRecord> => {
    const record = await orchestrator.createSandbox(opts);
    try {
      await owners.claim(record.sandboxId, record.templateId);
    } catch (err) {
      await orchestrator.killSandbox(record.sandboxId).catch((killErr: unknown) => logger.error({ err: killErr, sandboxId: record.sandboxId }, "could not kill an unowned sandbox"));
      throw err;
    }
    return record;
  };
  const fork = orchestrator.forkSandbox?.bind(orchestrator);
  // Each fork succeeds or fails on its own: a child whose record cannot be written becomes a failed fork.
  const forkSandbox = async (sandboxId: string, opts: ForkSandboxOptions): Promise<ForkResult[] | undefined> => {
    const results = await fork!(sandboxId, opts);
    if (!results) return results;
    return Promise.all(
      results.map(async (result): Promise<ForkResult> => {
        if (!result.sandbox) return result;
        try {
          await owners.claim(result.sandbox.sandboxId, result.sandbox.templateId);
          return result;
        } catch (err) {
          await orchestrator.killSandbox(result.sandbox.sandboxId).catch((killErr: unknown) => logger.error({ err: killErr, sandboxId: result.sandbox.sandboxId }, "could not kill an unowned fork"));
          return { error: err instanceof Error ? err : new Error(String(err)) };
        }
      }),
    );
  };
  return new Proxy(orchestrator, {
    get(target, prop, receiver) {
      if (prop === "createSandbox") return createSandbox;
      if (prop === "forkSandbox") return fork ? forkSandbox : undefined;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
