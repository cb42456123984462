// Creates record their owner before they answer: the orchestrator's createSandbox, wrapped so that the sandbox's
// ownership record is written (revision-checked) before the create returns to the API, hence before any client can
// address the sandbox through another node. A record of another node under the same id (ids are random, so only a
// bug or a replayed state directory makes one) fails the create and the sandbox is killed.
import type { CreateSandboxOptions, Orchestrator, SandboxRecord } from "@burrow/orchestrator";
import type { Logger } from "pino";
import type { SandboxOwners } from "./sandbox-owners.js";

export function ownedOrchestrator(orchestrator: Orchestrator, owners: SandboxOwners, logger: Logger): Orchestrator {
  const createSandbox = async (opts: CreateSandboxOptions): Promise<SandboxRecord> => {
    const record = await orchestrator.createSandbox(opts);
    try {
      await owners.claim(record.sandboxId);
    } catch (err) {
      await orchestrator.killSandbox(record.sandboxId).catch((killErr: unknown) => logger.error({ err: killErr, sandboxId: record.sandboxId }, "could not kill an unowned sandbox"));
      throw err;
    }
    return record;
  };
  return new Proxy(orchestrator, {
    get(target, prop, receiver) {
      if (prop === "createSandbox") return createSandbox;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
