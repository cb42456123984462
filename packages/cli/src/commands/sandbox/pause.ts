import { parseArgs } from "node:util";
import { Sandbox } from "e2b";
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";
import { printJson } from "../../output.js";

/** Freeze sandboxes with their memory and processes; they stop timing out until resumed. */
export async function sandboxPause(argv: string[], connection: Connection): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: "boolean", default: false } } });
  if (positionals.length === 0) throw new CliError("sandbox pause needs at least one sandbox id", 2);
  const results = await Promise.all(
    positionals.map(async (sandboxId) => ({ sandboxId, paused: await Sandbox.pause(sandboxId, connection) })),
  );
  if (values.json) printJson(results);
  else for (const r of results) process.stdout.write(`${r.sandboxId}\t${r.paused ? "paused" : "already paused"}\n`);
}

/** Resume paused sandboxes (E2B resumes on connect); `--timeout` sets their new lifetime in seconds. */
export async function sandboxResume(argv: string[], connection: Connection): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean", default: false }, timeout: { type: "string", default: "300" } },
  });
  if (positionals.length === 0) throw new CliError("sandbox resume needs at least one sandbox id", 2);
  const timeoutMs = Number(values.timeout) * 1000;
  const results = await Promise.all(
    positionals.map(async (sandboxId) => {
      await Sandbox.connect(sandboxId, { ...connection, timeoutMs });
      return { sandboxId, resumed: true };
    }),
  );
  if (values.json) printJson(results);
  else for (const r of results) process.stdout.write(`${r.sandboxId}\trunning\n`);
}
