#!/usr/bin/env node
// The `burrow` command. Errors end as one line on stderr and a non-zero exit code.
import { CliError } from "./cli-error.js";
import { sandboxCreate } from "./commands/sandbox/create.js";
import { sandboxExec } from "./commands/sandbox/exec.js";
import { sandboxKill } from "./commands/sandbox/kill.js";
import { sandboxList } from "./commands/sandbox/list.js";
import { sandboxPause, sandboxResume } from "./commands/sandbox/pause.js";
import { sandboxShell } from "./commands/sandbox/shell.js";
import { down } from "./commands/down.js";
import { TEMPLATE_COMMANDS } from "./commands/template/index.js";
import { up } from "./commands/up.js";
import { resolveConnection } from "./connection.js";
import { USAGE } from "./usage.js";

const SANDBOX_COMMANDS = {
  create: sandboxCreate,
  list: sandboxList,
  ls: sandboxList,
  kill: sandboxKill,
  exec: sandboxExec,
  shell: sandboxShell,
  pause: sandboxPause,
  resume: sandboxResume,
} as const;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === "up") return up(rest);
  if (command === "down") return down(rest);
  if (command === "sandbox" || command === "sbx") {
    const [verb, ...args] = rest;
    const handler = SANDBOX_COMMANDS[verb as keyof typeof SANDBOX_COMMANDS];
    if (!handler) throw new CliError(`unknown sandbox command '${verb ?? ""}'\n\n${USAGE}`, 2);
    return handler(args, resolveConnection());
  }
  if (command === "template" || command === "tpl") {
    const [verb, ...args] = rest;
    const handler = TEMPLATE_COMMANDS[verb as keyof typeof TEMPLATE_COMMANDS];
    if (!handler) throw new CliError(`unknown template command '${verb ?? ""}'\n\n${USAGE}`, 2);
    return handler(args, resolveConnection());
  }
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE);
    return;
  }
  throw new CliError(`unknown command '${command}'\n\n${USAGE}`, 2);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof CliError) {
    process.stderr.write(`burrow: ${error.message}\n`);
    process.exitCode = error.exitCode;
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`burrow: ${message}\n`);
  process.exitCode = 1;
});
