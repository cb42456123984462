// Team quotas for sandboxes the server creates on a team's behalf: the fresh sandbox a trigger rule or task runs in
// (bus/sandbox-runner.ts) is admitted against the quotas of the team whose key made the rule or task, as a create
// through the API is by the access hooks, so a task cannot start what the team could not.
import type { QuotaReservation } from "./team-quotas.js";
import type { TeamServices } from "./team-services.js";

/**
 * Admit one new sandbox of `template` for the team of `ownerKeyId`; throws the quota's 429 when it does not fit. On a
 * node of a cluster through the team ledger, as API creates are (team-quotas.ts admitShared).
 */
export type FreshSandboxAdmission = (ownerKeyId: number | null, template: string, timeoutSec: number, signal?: AbortSignal) => Promise<QuotaReservation>;

/** What a create without a known template is assumed to ask for (E2B's defaults), as the access hooks assume. */
export const FALLBACK_SANDBOX_SIZE = { cpuCount: 2, memoryMB: 512, diskMB: 0 };

export function freshSandboxAdmission(
  teams: Pick<TeamServices, "quotas" | "ownership" | "metrics">,
  templateSize: (ref: string) => { cpuCount: number; memoryMB: number; diskMB: number } | undefined,
): FreshSandboxAdmission {
  return async (ownerKeyId, template, timeoutSec, signal) => {
    const teamId = teams.ownership.teamOfKeyId(ownerKeyId);
    const reservation = await teams.quotas.admitShared(teamId, { count: 1, ...(templateSize(template) ?? FALLBACK_SANDBOX_SIZE), timeoutSec, kind: "new" }, undefined, signal);
    teams.metrics.started(teamId);
    return reservation;
  };
}
