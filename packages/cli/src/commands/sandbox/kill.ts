import { parseArgs } from "node:util";
import { Sandbox } from "e2b";
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";
import { printJson } from "../../output.js";

export async function sandboxKill(argv: string[], connection: Connection): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean", default: false } },
  });
  if (positionals.length === 0) throw new CliError("sandbox kill needs at least one sandbox id", 2);
  const results = await Promise.all(
    positionals.map(async (sandboxId) => ({ sandboxId, killed: await Sandbox.kill(sandboxId, connection) })),
  );
  if (values.json) printJson(results);
  else for (const r of results) process.stdout.write(`${r.sandboxId}\t${r.killed ? "killed" : "not found"}\n`);
  if (results.some((r) => !r.killed)) process.exitCode = 1;
}
