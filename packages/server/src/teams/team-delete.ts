// Deleting a team (DELETE /burrow/v1/teams/{id}, the instance admin's). A team that still holds anything (live keys,
// running or paused sandboxes, volumes, templates and snapshots, checkpoints, triggers, secrets) is refused with 409
// naming what it holds; with force, its keys are revoked first (so nothing new is made meanwhile, and their open
// requests end), then its sandboxes killed and its triggers, secrets, volumes, checkpoints and templates deleted. The team is marked
// deleted only when nothing is left, so a failed part answers an error and a retry finishes the job. The default
// team (the instance admin's) is never deleted.
import { BurrowError, Code } from "@burrow/protocol";
import type { AuditLog } from "./audit-log.js";
import type { Caller } from "./caller.js";
import type { KeyStreams } from "./key-streams.js";
import type { TeamStore } from "./team-store.js";

/** What a team may hold, listed and deleted by the services that own each kind (wired in api/app.ts). */
export interface TeamResources {
  /** Running and paused sandboxes. */
  sandboxes(teamId: string): string[];
  killSandbox(sandboxId: string): Promise<void>;
  volumes(teamId: string): string[];
  deleteVolume(teamId: string, volumeId: string): Promise<void>;
  /** Templates and snapshots that exist now. */
  templates(teamId: string): string[];
  deleteTemplate(templateId: string): Promise<void>;
  checkpoints(teamId: string): Promise<string[]>;
  deleteCheckpoint(checkpointId: string): Promise<void>;
  triggers(teamId: string): Promise<string[]>;
  deleteTrigger(triggerId: string): Promise<void>;
  secrets(teamId: string): string[];
  deleteSecret(teamId: string, secretId: string): Promise<void>;
}

export interface TeamHoldings {
  keys: string[];
  sandboxes: string[];
  volumes: string[];
  templates: string[];
  checkpoints: string[];
  triggers: string[];
  secrets: string[];
}

export interface TeamDeleteDeps {
  store: TeamStore;
  audit: AuditLog;
  streams: KeyStreams;
  resources: TeamResources;
  defaultTeamId: string;
}

async function holdings(d: TeamDeleteDeps, teamId: string): Promise<TeamHoldings> {
  const r = d.resources;
  return {
    keys: d.store.keysOf(teamId).map((k) => k.publicId),
    sandboxes: r.sandboxes(teamId),
    volumes: r.volumes(teamId),
    templates: r.templates(teamId),
    checkpoints: await r.checkpoints(teamId),
    triggers: await r.triggers(teamId),
    secrets: r.secrets(teamId),
  };
}

const ONE: Record<keyof TeamHoldings, string> = {
  keys: "key", sandboxes: "sandbox", volumes: "volume", templates: "template", checkpoints: "checkpoint", triggers: "trigger",
  secrets: "secret",
};

function describe(h: TeamHoldings): string {
  return (Object.entries(h) as Array<[keyof TeamHoldings, string[]]>)
    .filter(([, ids]) => ids.length > 0)
    .map(([kind, ids]) => `${ids.length} ${ids.length === 1 ? ONE[kind] : kind}`)
    .join(", ");
}

/** Delete a team; with `force`, everything it holds first. Answers what was removed. */
export async function deleteTeam(d: TeamDeleteDeps, caller: Caller, teamId: string, force: boolean): Promise<TeamHoldings> {
  const team = d.store.team(teamId);
  if (!team) throw new BurrowError(Code.NotFound, `team "${teamId}" not found`);
  if (teamId === d.defaultTeamId) {
    throw new BurrowError(Code.Aborted, "the default team holds the instance admin key and cannot be deleted", { reason: "default_team" });
  }
  const held = await holdings(d, teamId);
  const what = describe(held);
  if (what !== "" && !force) {
    throw new BurrowError(
      Code.Aborted,
      `team "${team.name}" still has ${what}; delete them first (revoke its keys with DELETE /api-keys/{id}) or pass force=true to delete them with the team`,
      { reason: "team_not_empty" },
    );
  }
  // Keys first: nothing new is made with them while the rest goes.
  for (const key of d.store.keysOf(teamId)) {
    d.store.revokeKey(key.id);
    d.streams.endAll(key.id);
  }
  const failures: string[] = [];
  const each = async (ids: string[], kind: string, op: (id: string) => Promise<void>) => {
    for (const id of ids) {
      try {
        await op(id);
      } catch (error) {
        failures.push(`${kind} ${id}: ${(error as Error).message}`);
      }
    }
  };
  const r = d.resources;
  // Triggers before sandboxes, so that no kill fires one; volumes after the sandboxes that mount them.
  await each(held.triggers, "trigger", (id) => r.deleteTrigger(id));
  await each(r.sandboxes(teamId), "sandbox", (id) => r.killSandbox(id));
  // Secrets after the sandboxes, whose egress header transforms read them per connection.
  await each(r.secrets(teamId), "secret", (id) => r.deleteSecret(teamId, id));
  await each(r.volumes(teamId), "volume", (id) => r.deleteVolume(teamId, id));
  await each(await r.checkpoints(teamId), "checkpoint", (id) => r.deleteCheckpoint(id));
  await each(r.templates(teamId), "template", (id) => r.deleteTemplate(id));
  const detail = { name: team.name, force, ...held };
  if (failures.length > 0) {
    d.audit.record({ teamId, keyId: caller.keyPublicId, action: "delete_failed", resourceKind: "team", resourceId: teamId, detail: { ...detail, failures } });
    throw new BurrowError(Code.Internal, `team "${team.name}" was not deleted: its keys are revoked, but ${failures.join("; ")}; retry to finish`, {
      reason: "team_delete_incomplete",
    });
  }
  d.store.markDeleted(teamId);
  d.audit.record({ teamId, keyId: caller.keyPublicId, action: "delete", resourceKind: "team", resourceId: teamId, detail });
  return held;
}
