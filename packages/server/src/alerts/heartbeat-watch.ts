// heartbeat_lost: the bus's liveness monitor decides when an agent is down (no heartbeat within its window); this
// follows its up/down transitions and raises one alert per loss (up, then down). An agent first seen already down
// (it stopped before this server started) was never seen lost, so it raises nothing.
import type { LivenessEvent } from "@burrow/bus";
import type { Logger } from "pino";
import type { BusOwner } from "./bus-owner.js";
import type { RaiseAlert } from "./alert-kinds.js";

export interface HeartbeatWatchDeps {
  events: (signal: AbortSignal) => AsyncIterable<LivenessEvent>;
  owner: (agentId: string) => BusOwner;
  raise: RaiseAlert;
  logger: Logger;
}

export function watchHeartbeats(d: HeartbeatWatchDeps): () => void {
  const abort = new AbortController();
  const up = new Set<string>();
  void (async () => {
    for await (const { type, agent } of d.events(abort.signal)) {
      if (type === "up") {
        up.add(agent.agentId);
        continue;
      }
      if (!up.delete(agent.agentId)) continue;
      try {
        lost(agent);
      } catch (err) {
        d.logger.warn({ err, agentId: agent.agentId }, "could not raise a heartbeat_lost alert");
      }
    }
  })().catch((err: unknown) => {
    if (!abort.signal.aborted) d.logger.warn({ err }, "heartbeat alerts stopped");
  });
  return () => abort.abort();

  function lost(agent: LivenessEvent["agent"]): void {
    const owner = d.owner(agent.agentId);
    const silentMs = Date.now() - agent.lastSeenMs;
    d.raise("heartbeat_lost", `agent ${owner.name} sent no heartbeat for ${Math.round(silentMs / 1000)} s`, {
      agentId: owner.name,
      lastSeen: new Date(agent.lastSeenMs).toISOString(),
      ...(agent.group ? { group: agent.group } : {}),
    }, { teamId: owner.teamId });
  }
}
