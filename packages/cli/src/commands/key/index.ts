// burrow key create|list|revoke: a team's API keys through E2B's /api-keys endpoints (a team admin key, or the
// instance admin key with --team for another team). A created key is printed once; revoking ends its open streams.
import { apiRequest } from "../../api.js";
import { defineCommand, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson, printRows } from "../../output.js";

interface KeyView {
  id: string;
  name: string;
  key?: string;
  role: string;
  teamID: string;
  createdAt: string;
  lastUsed: string | null;
  mask: { prefix: string; maskedValuePrefix: string; maskedValueSuffix: string };
}

const teamOption = { team: { type: "string", value: "TEAM_ID", description: "Another team's keys (instance admin key only)" } } as const;

const keyCreate = defineCommand({
  name: "create",
  summary: "Create an API key (printed once)",
  args: "NAME",
  minArgs: 1,
  maxArgs: 1,
  options: { ...teamOption, admin: { type: "boolean", description: "The key may manage its team's keys" }, json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const body = { name: positionals[0], ...(values.team ? { teamID: values.team } : {}), ...(values.admin ? { admin: true } : {}) };
    const key = (await apiRequest(clientConnection(env), "POST", "/api-keys", { body })).body as KeyView;
    if (values.json) return printJson(key);
    process.stdout.write(`key ${key.name} (${key.id}, ${key.role}) in team ${key.teamID}\n${key.key}\n`);
  },
});

const keyList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List a team's API keys (masked)",
  options: { ...teamOption, json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const query = values.team ? new URLSearchParams({ teamID: values.team }) : undefined;
    const keys = (await apiRequest(clientConnection(env), "GET", "/api-keys", query ? { query } : {})).body as KeyView[];
    printRows(
      keys.map((k) => ({
        id: k.id,
        name: k.name,
        role: k.role,
        key: `${k.mask.prefix}${k.mask.maskedValuePrefix}…${k.mask.maskedValueSuffix}`,
        createdAt: k.createdAt,
        lastUsed: k.lastUsed ?? "",
      })),
      ["id", "name", "role", "key", "createdAt", "lastUsed"],
      values.json ?? false,
    );
  },
});

const keyRevoke = defineCommand({
  name: "revoke",
  summary: "Revoke API keys by id; they stop working at once (exit code 1 if one was not found)",
  args: "ID...",
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const connection = clientConnection(env);
    const results = [];
    for (const id of positionals) {
      const res = await apiRequest(connection, "DELETE", `/api-keys/${encodeURIComponent(id)}`, { expect: [404] });
      results.push({ id, revoked: res.status !== 404 });
    }
    if (values.json) printJson(results);
    else for (const r of results) process.stdout.write(`${r.id}\t${r.revoked ? "revoked" : "not found"}\n`);
    if (results.some((r) => !r.revoked)) process.exitCode = 1;
  },
});

export const keyCommands: CommandGroup = {
  name: "key",
  summary: "Create, list and revoke API keys",
  commands: [keyCreate, keyList, keyRevoke],
};
