// Which team a template belongs to, in the cluster's terms: a team id shared by every node (team-sync.ts), or null for
// a node's default team, which each node made under its own id (a template of the default team on one node is the
// default team's on every node, as keys of it are).
import type { Ownership } from "../teams/ownership.js";
import type { TemplateTeams } from "./cluster-templates.js";

export function clusterTemplateTeams(ownership: Ownership, defaultTeamId: string): TemplateTeams {
  const shared = (team: string) => (team === defaultTeamId ? null : team);
  const local = (team: string | null) => team ?? defaultTeamId;
  return {
    ownerOf: (templateId) => {
      const snapshot = ownership.recordedOwner("snapshot", templateId);
      if (snapshot !== undefined) return { kind: "snapshot", team: shared(snapshot) };
      return { kind: "template", team: shared(ownership.recordedOwner("template", templateId) ?? defaultTeamId) };
    },
    adopt: (kind, templateId, team) => ownership.record(kind, templateId, local(team)),
    mayUse: (apiKeyId, team) => ownership.teamOfKeyId(apiKeyId ?? null) === local(team),
  };
}
