// A team's quota usage on the other nodes of the cluster, summed from the owner records this node mirrors (their
// facts: owner-facts.ts): running sandboxes, their vCPUs and memory. This node's own sandboxes are left out (its store
// counts them, with its creates under way), and so are sandboxes marked lost (their node is down: their usage is
// released) or killed while lost, paused ones (they hold no running quota), and records without facts (written by an
// older node, or not yet described: a moment after a create elsewhere). No round trip: a create is checked against
// what the mirror holds, so two creates for one team on two nodes at the same instant can both pass (by one each).
import type { SandboxOwners } from "./sandbox-owners.js";

export interface RemoteUsage {
  runningSandboxes: number;
  vcpu: number;
  memoryMB: number;
}

/** Usage on other nodes, by team id; the key null is each node's default team (this node's, for its caller). */
export function teamUsageElsewhere(owners: SandboxOwners, self: string): Map<string | null, RemoteUsage> {
  const byTeam = new Map<string | null, RemoteUsage>();
  for (const [, record] of owners.cachedRecords()) {
    if (record.node === self || record.lostAt !== undefined || record.killedAt !== undefined || record.paused !== false || record.teamId === undefined) continue;
    const usage = byTeam.get(record.teamId) ?? { runningSandboxes: 0, vcpu: 0, memoryMB: 0 };
    usage.runningSandboxes++;
    usage.vcpu += record.vcpu ?? 0;
    usage.memoryMB += record.memoryMB ?? 0;
    byTeam.set(record.teamId, usage);
  }
  return byTeam;
}
