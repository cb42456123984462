import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { connectSandbox } from "./connect.js";
import { parseInteger } from "../../numbers.js";
import { printJson } from "../../output.js";

/** Run one command in a sandbox; streams its output unless --json, and exits with its exit code. */
export const sandboxExec = defineCommand({
  name: "exec",
  summary: "Run a command in a sandbox and exit with its exit code",
  args: "ID -- COMMAND...",
  minArgs: 2,
  maxArgs: Number.POSITIVE_INFINITY,
  notes: "One COMMAND word is run by the shell as it is ('echo $HOME'); several are quoted and joined.",
  options: {
    user: { type: "string", value: "USER", description: "Run as this user (default: the template's, usually user)" },
    cwd: { type: "string", value: "DIR", description: "Working directory" },
    timeout: { type: "string", value: "SECONDS", description: "Kill the command after this long; 0 = no limit (default 0)" },
    json: { type: "boolean", description: "Print exit code, stdout and stderr as JSON instead of streaming" },
  },
  async run({ values, positionals, env }) {
    const [sandboxId = "", ...command] = positionals;
    const timeout = values.timeout === undefined ? 0 : parseInteger("--timeout", values.timeout);
    const connection = clientConnection(env);
    const { CommandExitError } = await import("e2b");
    const sandbox = await connectSandbox(sandboxId, connection);
    const cmd = command.length === 1 ? (command[0] ?? "") : command.map(shellQuote).join(" ");
    const stream = !values.json;
    try {
      const result = await sandbox.commands.run(cmd, {
        ...(values.user ? { user: values.user } : {}),
        ...(values.cwd ? { cwd: values.cwd } : {}),
        timeoutMs: timeout * 1000,
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
  },
});

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}
