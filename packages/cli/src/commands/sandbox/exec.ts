import { parseArgs } from "node:util";
import { CommandExitError, Sandbox } from "e2b";
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";
import { printJson } from "../../output.js";

/** Run one command in a sandbox; streams its output unless --json, and exits with its exit code. */
export async function sandboxExec(argv: string[], connection: Connection): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      user: { type: "string" },
      cwd: { type: "string" },
      timeout: { type: "string", default: "0" },
      json: { type: "boolean", default: false },
    },
  });
  const [sandboxId, ...command] = positionals;
  if (!sandboxId || command.length === 0) throw new CliError("usage: burrow sandbox exec ID -- COMMAND...", 2);
  const sandbox = await Sandbox.connect(sandboxId, connection);
  const cmd = command.length === 1 ? (command[0] ?? "") : command.map(shellQuote).join(" ");
  const stream = !values.json;
  try {
    const result = await sandbox.commands.run(cmd, {
      ...(values.user ? { user: values.user } : {}),
      ...(values.cwd ? { cwd: values.cwd } : {}),
      timeoutMs: Number(values.timeout) * 1000,
      ...(stream
        ? { onStdout: (data: string) => void process.stdout.write(data), onStderr: (data: string) => void process.stderr.write(data) }
        : {}),
    });
    if (values.json) printJson({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr });
  } catch (error) {
    if (!(error instanceof CommandExitError)) throw error;
    if (values.json) printJson({ exitCode: error.exitCode, stdout: error.stdout, stderr: error.stderr });
    process.exitCode = error.exitCode;
  }
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}
