// The egress kept with snapshots and checkpoints (store/sandbox-networks.ts) goes with them: a checkpoint's when the
// checkpoint service deletes it, a snapshot's (deleted as a template, or with its team) at the next start, where what
// no template or checkpoint names any more is dropped. It may hold a user's proxy password: kept no longer than needed.
import type { Orchestrator } from "@burrow/orchestrator";
import type { SandboxNetworkStore } from "../store/sandbox-networks.js";

/** Drop kept egress whose snapshot or checkpoint is gone; resolves how many were dropped. Unsure answers keep it. */
export async function pruneNetworkCopies(
  orchestrator: Pick<Orchestrator, "resolveTemplate" | "getCheckpoint">,
  networks: Pick<SandboxNetworkStore, "copyIds" | "dropCopy">,
  signal?: AbortSignal,
): Promise<number> {
  let dropped = 0;
  for (const id of networks.copyIds()) {
    signal?.throwIfAborted();
    if (orchestrator.resolveTemplate(id)) continue;
    const checkpoint = orchestrator.getCheckpoint ? await orchestrator.getCheckpoint(id, signal ? { signal } : undefined).catch(() => null) : undefined;
    // null: the lookup failed, which says nothing about whether it exists.
    if (checkpoint !== undefined) continue;
    networks.dropCopy(id);
    dropped += 1;
  }
  return dropped;
}
