// burrow team create NAME | burrow team list | burrow team delete TEAM [--force]: teams of this server (creating and
// deleting one needs the instance admin key, which the CLI on the server machine reads from the state directory). A
// new team's first admin key is printed once.
import { apiRequest } from "../../api.js";
import { defineCommand, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson, printRows } from "../../output.js";

interface TeamView {
  teamID: string;
  name: string;
  createdAt: string;
  quotas: Record<string, number>;
  usage: { runningSandboxes: number; vcpu: number; memoryMB: number };
  adminKey?: { id: string; key: string };
}

const teamCreate = defineCommand({
  name: "create",
  summary: "Create a team and its first admin key (printed once)",
  args: "NAME",
  minArgs: 1,
  maxArgs: 1,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const team = (await apiRequest(clientConnection(env), "POST", "/burrow/v1/teams", { body: { name: positionals[0] } })).body as TeamView;
    if (values.json) return printJson(team);
    process.stdout.write(`team ${team.name} (${team.teamID})\nadmin key (shown once, keep it): ${team.adminKey?.key}\n`);
  },
});

const teamList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List teams with their running sandboxes (all teams with the instance admin key)",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const teams = (await apiRequest(clientConnection(env), "GET", "/burrow/v1/teams")).body as TeamView[];
    printRows(
      teams.map((t) => ({ teamId: t.teamID, name: t.name, running: t.usage.runningSandboxes, createdAt: t.createdAt, quotas: t.quotas })),
      ["teamId", "name", "running", "createdAt"],
      values.json ?? false,
    );
  },
});

const ONE: Record<string, string> = {
  keys: "key", sandboxes: "sandbox", volumes: "volume", templates: "template", checkpoints: "checkpoint", triggers: "trigger",
  secrets: "secret",
};

interface DeletedTeam {
  teamID: string;
  deleted: Record<string, string[]>;
}

const teamDelete = defineCommand({
  name: "delete",
  aliases: ["rm"],
  summary: "Delete a team (by id or name); refused while it holds keys, sandboxes, volumes, templates, checkpoints, triggers or secrets unless --force",
  args: "TEAM",
  minArgs: 1,
  maxArgs: 1,
  options: {
    force: { type: "boolean", description: "Revoke its keys, kill its sandboxes and delete everything it holds with it" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const connection = clientConnection(env);
    const ref = positionals[0]!;
    // A name is looked up among the teams the key sees; anything else is taken as an id (the server answers 404).
    const teams = (await apiRequest(connection, "GET", "/burrow/v1/teams")).body as TeamView[];
    const teamId = teams.find((t) => t.teamID === ref)?.teamID ?? teams.find((t) => t.name === ref)?.teamID ?? ref;
    const path = `/burrow/v1/teams/${encodeURIComponent(teamId)}${values.force ? "?force=true" : ""}`;
    const result = (await apiRequest(connection, "DELETE", path)).body as DeletedTeam;
    if (values.json) return printJson(result);
    const removed = Object.entries(result.deleted)
      .filter(([, ids]) => ids.length > 0)
      .map(([kind, ids]) => `${ids.length} ${ids.length === 1 ? (ONE[kind] ?? kind) : kind}`)
      .join(", ");
    process.stdout.write(`team ${result.teamID} deleted${removed ? ` with ${removed}` : ""}\n`);
  },
});

export const teamCommands: CommandGroup = {
  name: "team",
  summary: "Create, list and delete teams",
  commands: [teamCreate, teamList, teamDelete],
};
