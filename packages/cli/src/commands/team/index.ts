// burrow team create NAME | burrow team list: teams of this server (creating one needs the instance admin key, which
// the CLI on the server machine reads from the state directory). A new team's first admin key is printed once.
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

export const teamCommands: CommandGroup = {
  name: "team",
  summary: "Create and list teams",
  commands: [teamCreate, teamList],
};
