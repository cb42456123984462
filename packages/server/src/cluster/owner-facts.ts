// What other nodes need to know of this node's sandboxes beyond where they are: their team, vCPUs, memory and whether
// they are paused, written into their owner records (version 3). Other nodes send a sandbox's `lost` event to its
// team (lost-sweep.ts) and count a team's quota usage over every node from them (team-usage.ts). Written once the
// sandbox is in this node's store (its `created` event: the create itself has already claimed the id and answered
// nothing yet about the team), again on pause and resume, and for every sandbox the node has when it starts (records
// of older versions get the facts then). A failed write is logged: usage elsewhere is then short of this sandbox
// until its next change, never doubled.
import type { Logger } from "pino";
import type { SandboxEvents } from "../lifecycle/events.js";
import type { OwnerFacts, SandboxOwners } from "./sandbox-owners.js";

/** Events after which the facts may have changed. */
const CHANGES = new Set(["created", "paused", "resumed", "recovered"]);

/** A sandbox claimed from its own `created` event (a branch child) may not be recorded yet: asked again after this. */
const RETRY_MS = 300;

export interface OwnerFactsDeps {
  owners: SandboxOwners;
  events: SandboxEvents;
  /** The facts of a sandbox this node has; undefined when it has none. */
  facts: (sandboxId: string) => OwnerFacts | undefined;
  localIds: () => string[];
  logger: Logger;
}

/** Start writing facts; returns the stop function. The node's current sandboxes are written in the background. */
export function followOwnerFacts(d: OwnerFactsDeps): () => void {
  // One write at a time per sandbox, in event order, so that a pause right after a create lands last.
  const queues = new Map<string, Promise<void>>();
  let stopped = false;
  const write = (sandboxId: string) => {
    const previous = queues.get(sandboxId) ?? Promise.resolve();
    const next = previous.then(() => describe(sandboxId));
    queues.set(sandboxId, next);
    void next.finally(() => {
      if (queues.get(sandboxId) === next) queues.delete(sandboxId);
    });
  };
  const describe = async (sandboxId: string) => {
    for (let attempt = 0; attempt < 3 && !stopped; attempt++) {
      const facts = d.facts(sandboxId);
      if (!facts) return;
      try {
        if (await d.owners.describe(sandboxId, facts)) return;
      } catch (err) {
        d.logger.warn({ err, sandboxId }, "could not write a sandbox's team and size into its owner record");
        return;
      }
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  };
  const stop = d.events.subscribe((event) => {
    if (CHANGES.has(event.type)) write(event.sandboxId);
  });
  for (const sandboxId of d.localIds()) write(sandboxId);
  return () => {
    stopped = true;
    stop();
  };
}
