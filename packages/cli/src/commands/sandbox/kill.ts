import { apiRequest } from "../../api.js";
import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson } from "../../output.js";

export const sandboxKill = defineCommand({
  name: "kill",
  summary: "Kill sandboxes (exit code 1 if one was not found)",
  args: "ID...",
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const connection = clientConnection(env);
    const results = await Promise.all(
      positionals.map(async (sandboxId) => {
        const res = await apiRequest(connection, "DELETE", `/sandboxes/${encodeURIComponent(sandboxId)}`, { expect: [404] });
        return { sandboxId, killed: res.status !== 404 };
      }),
    );
    if (values.json) printJson(results);
    else for (const r of results) process.stdout.write(`${r.sandboxId}\t${r.killed ? "killed" : "not found"}\n`);
    if (results.some((r) => !r.killed)) process.exitCode = 1;
  },
});
