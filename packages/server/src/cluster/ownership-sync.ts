// Keeps the owners bucket true for this node's sandboxes: at start every sandbox the node has (running or paused) is
// claimed, or reconciled when the node's sandboxes are given (reconcile.ts: a record marked lost is taken back, an id
// another node owns is killed here), and every record of this node for a sandbox it no longer has is removed;
// afterwards sandboxes made by other paths than createSandbox (forks, checkpoint branches) are claimed from their
// `created` event, and ended ones released from their `killed`/`timed_out` events. A pause keeps the record: the
// sandbox stays this node's.
import type { Logger } from "pino";
import type { SandboxEvents } from "../lifecycle/events.js";
import { reconcileOwnership, type LocalSandboxes } from "./reconcile.js";
import type { SandboxOwners } from "./sandbox-owners.js";

export async function syncOwnership(owners: SandboxOwners, localIds: () => string[], events: SandboxEvents, logger: Logger, local?: LocalSandboxes, nodeName?: string): Promise<() => void> {
  if (local && nodeName) {
    await reconcileOwnership({ owners, nodeName, local, events, logger }, localIds());
  } else {
    const ids = new Set(localIds());
    for (const sandboxId of ids) {
      await owners.claim(sandboxId).catch((err: unknown) => logger.error({ err, sandboxId }, "could not record this node as a sandbox's owner"));
    }
    for (const sandboxId of await owners.mine()) {
      if (!ids.has(sandboxId)) await owners.release(sandboxId).catch((err: unknown) => logger.warn({ err, sandboxId }, "could not remove a stale owner record"));
    }
  }
  return events.subscribe((event) => {
    const { sandboxId } = event;
    if (event.type === "created") {
      void owners.claimNew(sandboxId, event.templateId).catch((err: unknown) => logger.error({ err, sandboxId }, "could not record this node as a sandbox's owner"));
    } else if (event.type === "killed" || event.type === "timed_out") {
      void owners.release(sandboxId).catch((err: unknown) => logger.warn({ err, sandboxId }, "could not remove an ended sandbox's owner record"));
    }
  });
}
