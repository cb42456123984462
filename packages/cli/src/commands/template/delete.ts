// burrow template delete <name or id>...
import { apiRequest } from "../../api.js";
import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";

export const templateDelete = defineCommand({
  name: "delete",
  aliases: ["rm"],
  summary: "Delete templates by name or id",
  args: "NAME|ID...",
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  options: {},
  async run({ positionals, env }) {
    const connection = clientConnection(env);
    for (const ref of positionals) {
      await apiRequest(connection, "DELETE", `/templates/${encodeURIComponent(ref)}`);
      process.stdout.write(`deleted ${ref}\n`);
    }
  },
});
