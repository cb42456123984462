// Whose sandboxes a list shows. E2B's answer is the caller's team's, and stays so by default; Burrow's `team` query
// parameter lets the instance admin list another team's (`team=<team id>`) or every team's (`team=all`), so that an
// operator finds a runaway sandbox wherever it is. A team key may name only its own team.
import { BurrowError, Code } from "@burrow/protocol";
import type { Caller } from "./caller.js";

export const ALL_TEAMS = "all";

/** The team whose sandboxes to list, or ALL_TEAMS. */
export function sandboxListTeam(caller: Caller, team: string | undefined, teamExists: (teamId: string) => boolean): string {
  if (team === undefined || team === "" || team === caller.teamId) return caller.teamId;
  if (!caller.instanceAdmin) {
    if (team === ALL_TEAMS) throw new BurrowError(Code.PermissionDenied, "listing every team's sandboxes (team=all) needs the instance admin key");
    throw new BurrowError(Code.NotFound, `team "${team}" not found`);
  }
  if (team !== ALL_TEAMS && !teamExists(team)) throw new BurrowError(Code.NotFound, `team "${team}" not found`);
  return team;
}
