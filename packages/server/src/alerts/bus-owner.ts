// The team of a queue or an agent from its stored name: a team's names carry its namespace prefix (teams/bus-names.ts),
// bare names are the default team's. Alerts about them name them as their team knows them (without the prefix).
import { busNamespace } from "../teams/bus-names.js";

const NAMESPACE = /^t[0-9a-f]{8}-/;

export interface BusOwner {
  /** Undefined when the prefix names no team (left over from a deleted one): only the instance admin hears of it. */
  teamId: string | undefined;
  /** The name as its team uses it. */
  name: string;
}

export function busOwner(stored: string, teams: () => readonly { teamId: string }[], defaultTeamId: string): BusOwner {
  const prefix = NAMESPACE.exec(stored)?.[0];
  if (prefix === undefined) return { teamId: defaultTeamId, name: stored };
  const team = teams().find((t) => busNamespace(t.teamId, defaultTeamId) === prefix);
  return team ? { teamId: team.teamId, name: stored.slice(prefix.length) } : { teamId: undefined, name: stored };
}
