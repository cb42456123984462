// A team's quota usage on the other nodes of the cluster, summed from the owner records this node mirrors (their
// facts: owner-facts.ts): running sandboxes, their vCPUs and memory, and the disk of every sandbox the team has there
// (running or paused). This node's own sandboxes are left out (its store counts them), and so are sandboxes marked lost
// (their node is down: their usage is released) or killed while lost, paused ones for what they do not hold, and
// records without facts (written by an older node, or not yet described: a moment after a create elsewhere). No round
// trip: the mirror is read. What a mirror cannot hold yet — a create under way on another node, or one that answered
// a moment ago — is in the team's record of holds (team-ledger.ts), which a team with a limit is admitted through.
import type { SandboxOwners } from "./sandbox-owners.js";
import { RECORD_GRACE_MS } from "./team-ledger.js";

export interface RemoteUsage {
  runningSandboxes: number;
  vcpu: number;
  memoryMB: number;
  diskMB: number;
}

/** Usage on other nodes, by team id; the key null is each node's default team (this node's, for its caller). */
export function teamUsageElsewhere(owners: SandboxOwners, self: string): Map<string | null, RemoteUsage> {
  const byTeam = new Map<string | null, RemoteUsage>();
  for (const [, record] of owners.cachedRecords()) {
    if (record.node === self || record.lostAt !== undefined || record.killedAt !== undefined || record.teamId === undefined) continue;
    const usage = byTeam.get(record.teamId) ?? { runningSandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: 0 };
    usage.diskMB += record.diskMB ?? 0;
    if (record.paused === false) {
      usage.runningSandboxes++;
      usage.vcpu += record.vcpu ?? 0;
      usage.memoryMB += record.memoryMB ?? 0;
    }
    byTeam.set(record.teamId, usage);
  }
  return byTeam;
}

/**
 * Whether a sandbox a settled hold names is counted already by this node's usage (its store for its own, the mirror
 * for others': teamUsageElsewhere), or has ended, so that the hold stops counting it. A hold of this node: its store
 * has the sandbox from before the answer (or it ended). Another node's: once the mirror has its record with facts
 * saying it runs, or marked lost; a record the mirror does not have a while after the answer has been removed.
 */
export function countedByUsage(owners: SandboxOwners, sandboxId: string, hold: { node: string; settledAt?: number }, self: string, now: number): boolean {
  if (hold.node === self) return true;
  const record = owners.cachedRecord(sandboxId);
  if (!record) return now - (hold.settledAt ?? now) > RECORD_GRACE_MS;
  if (record.node === self || record.lostAt !== undefined || record.killedAt !== undefined) return true;
  return record.teamId !== undefined && record.paused === false;
}
