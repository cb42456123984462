#!/usr/bin/env node
// The `burrow` command. Usage errors exit with 2, failures with 1; both end as one line on stderr.
import { readFileSync } from "node:fs";
import { CliError } from "./cli-error.js";
import { type Command, matchesName, parseCommand, usageError } from "./command.js";
import { COMMANDS } from "./commands/index.js";
import type { Env } from "./config.js";
import { commandHelp, type Entry, groupHelp, isGroup, topHelp } from "./help.js";

const HELP_FLAGS = new Set(["-h", "--help"]);

// The one place the CLI reads the environment: commands get it as `env` and resolve their settings from it.
async function main(argv: readonly string[], env: Env): Promise<void> {
  const [first, ...rest] = argv;
  if (first === undefined || HELP_FLAGS.has(first)) return print(topHelp(COMMANDS));
  if (first === "-V" || first === "--version") return print(`${version()}\n`);
  // `burrow help sandbox list` is `burrow sandbox list --help`.
  if (first === "help") return main(rest.length === 0 ? ["--help"] : [...rest, "--help"], env);
  if (first.startsWith("-")) throw usageError(`unknown option '${first}' (see 'burrow --help')`);
  const entry = find(COMMANDS, first, "command", "burrow --help");
  if (!isGroup(entry)) return run(entry, entry.name, rest, env);
  const [verb, ...args] = rest;
  if (verb === undefined || HELP_FLAGS.has(verb)) return print(groupHelp(entry));
  if (verb.startsWith("-")) throw usageError(`unknown option '${verb}' for 'burrow ${entry.name}' (see 'burrow ${entry.name} --help')`);
  const command = find(entry.commands, verb, `${entry.name} command`, `burrow ${entry.name} --help`);
  return run(command, `${entry.name} ${command.name}`, args, env);
}

async function run(command: Command, path: string, argv: readonly string[], env: Env): Promise<void> {
  const input = parseCommand(command, path, argv);
  if (input === "help") return print(commandHelp(command, path));
  await command.run({ ...input, env });
}

function find<T extends Entry>(entries: readonly T[], word: string, what: string, helpCommand: string): T {
  const entry = entries.find((candidate) => matchesName(candidate, word));
  if (entry) return entry;
  const close = entries.find((candidate) => [candidate.name, ...(candidate.aliases ?? [])].some((name) => editDistance(name, word) <= 2));
  const hint = close ? `did you mean '${close.name}'? ` : "";
  throw usageError(`unknown ${what} '${word}' (${hint}see '${helpCommand}')`);
}

/** Levenshtein distance, for "did you mean" on short command names. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return `burrow ${pkg.version}`;
}

function print(text: string): void {
  process.stdout.write(text);
}

main(process.argv.slice(2), process.env).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`burrow: ${message}\n`);
  process.exitCode = error instanceof CliError ? error.exitCode : 1;
});
