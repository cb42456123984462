// What a team holds, found through its owners (sandboxes by their key's team, volumes by their team, the rest by
// resource_owners) and deleted through the services that made them, for a team's deletion (team-delete.ts).
import type { Orchestrator } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import type { TriggerService } from "../bus/trigger-service.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SecretService } from "../secrets/index.js";
import type { TemplateBuildService } from "../templates-api/template-build-service.js";
import type { VolumeService } from "../volumes/volume-service.js";
import type { Ownership } from "./ownership.js";
import type { TeamResources } from "./team-delete.js";

export interface TeamResourcesDeps {
  ownership: Ownership;
  sandboxes: SandboxService;
  volumes: VolumeService;
  orchestrator: Orchestrator;
  /** Without a template builder, templates cannot be deleted (a team cannot have built any either). */
  templates?: TemplateBuildService | undefined;
  /** Without a bus there are no triggers. */
  triggers?: TriggerService | undefined;
  secrets: SecretService;
  /** The key a team's secrets are stored under (TeamStore.anchorOfTeam). */
  anchorOf: (teamId: string) => number | undefined;
}

export function teamResources(d: TeamResourcesDeps): TeamResources {
  const unique = (ids: string[]) => [...new Set(ids)];
  return {
    sandboxes: (teamId) => d.sandboxes.list().filter((row) => d.ownership.teamOfSandbox(row) === teamId).map((row) => row.sandboxId),
    killSandbox: async (sandboxId) => {
      await d.sandboxes.kill(sandboxId, "api");
    },
    volumes: (teamId) => d.volumes.list({ teamId }).map((row) => row.volumeId),
    deleteVolume: (teamId, volumeId) => d.volumes.delete(volumeId, { teamId }),
    templates: (teamId) =>
      unique(d.ownership.recordedOf(teamId, ["template", "snapshot"]).map((r) => r.id)).filter((id) => d.orchestrator.resolveTemplate(id) !== undefined),
    deleteTemplate: async (templateId) => {
      if (!d.templates) throw new BurrowError(Code.Unimplemented, "templates cannot be deleted without a template builder");
      await d.templates.deleteTemplate(templateId);
    },
    checkpoints: async (teamId) => {
      const ids = unique(d.ownership.recordedOf(teamId, ["checkpoint"]).map((r) => r.id));
      if (!d.orchestrator.getCheckpoint) return [];
      const live: string[] = [];
      for (const id of ids) if (await d.orchestrator.getCheckpoint(id)) live.push(id);
      return live;
    },
    // Its descendants are the team's too (branches and checkpoints of its sandboxes); one may have gone with a parent.
    deleteCheckpoint: async (checkpointId) => {
      await d.orchestrator.deleteCheckpoint?.(checkpointId, { cascade: true });
    },
    triggers: async (teamId) => {
      if (!d.triggers) return [];
      const live: string[] = [];
      // Tasks are recorded under the same kind; only rules are found by get.
      for (const { id } of d.ownership.recordedOf(teamId, ["trigger"])) if (await d.triggers.get(id)) live.push(id);
      return unique(live);
    },
    deleteTrigger: async (triggerId) => {
      await d.triggers?.delete(triggerId);
    },
    secrets: (teamId) => {
      const apiKeyId = d.anchorOf(teamId);
      if (apiKeyId === undefined) return [];
      const ids: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = d.secrets.list({ apiKeyId }, { nextToken });
        ids.push(...page.secrets.map((s) => s.secretId));
        nextToken = page.nextToken;
      } while (nextToken !== undefined);
      return ids;
    },
    deleteSecret: async (teamId, secretId) => {
      const apiKeyId = d.anchorOf(teamId);
      if (apiKeyId !== undefined) d.secrets.delete({ apiKeyId }, secretId);
    },
  };
}
