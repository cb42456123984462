// Help text, generated from the command declarations so that it cannot drift from what the parser accepts.
import { type Command, type CommandGroup, HELP_OPTION, type OptionSpec, usageTail } from "./command.js";
import { DEFAULT_API_URL, DEFAULT_STATE_DIR } from "./config.js";

export type Entry = Command | CommandGroup;

export function isGroup(entry: Entry): entry is CommandGroup {
  return "commands" in entry;
}

const TAGLINE = "burrow — self-hosted, E2B-compatible sandboxes for AI agents";

const CONNECTION_NOTE = [
  `Sandbox and template commands connect to E2B_API_URL (default ${DEFAULT_API_URL}), E2B_SANDBOX_URL`,
  "(default: the API URL) with E2B_API_KEY (default: the key in <state dir>/api-key; state dir from",
  `BURROW_STATE_DIR, default ${DEFAULT_STATE_DIR}).`,
].join("\n");

export function topHelp(entries: readonly Entry[]): string {
  return [
    TAGLINE,
    "",
    "Usage: burrow <command> [options]",
    "",
    "Commands:",
    ...table(entries.map((entry) => [names(entry), entry.summary])),
    "",
    "Options:",
    ...table([
      ["-h, --help", "Show help; 'burrow <command> --help' shows a command's"],
      ["-V, --version", "Show the version"],
    ]),
    "",
    CONNECTION_NOTE,
    "",
  ].join("\n");
}

export function groupHelp(group: CommandGroup): string {
  return [
    `Usage: burrow ${group.name} <command> [options]`,
    "",
    `${group.summary}.`,
    "",
    "Commands:",
    ...table(group.commands.map((command) => [names(command), command.summary])),
    "",
    `Run 'burrow ${group.name} <command> --help' for a command's options.`,
    ...(group.name === "sandbox" || group.name === "template" ? ["", CONNECTION_NOTE] : []),
    "",
  ].join("\n");
}

export function commandHelp(command: Command, path: string): string {
  const options: [string, string][] = Object.entries({ ...command.options, help: HELP_OPTION }).map(([name, spec]) => [
    optionLabel(name, spec),
    spec.description,
  ]);
  return [
    `Usage: burrow ${path} ${usageTail(command)}`.trimEnd(),
    "",
    `${command.summary}.`,
    ...(command.aliases?.length ? [`Also: ${command.aliases.map((alias) => `burrow ${path.replace(/\S+$/, alias)}`).join(", ")}`] : []),
    "",
    "Options:",
    ...table(options),
    ...(command.notes ? ["", command.notes] : []),
    "",
  ].join("\n");
}

function names(entry: Entry): string {
  return [entry.name, ...(entry.aliases ?? [])].join(", ");
}

function optionLabel(name: string, spec: OptionSpec): string {
  const long = `--${name}${spec.type === "string" ? ` ${spec.value ?? "VALUE"}` : ""}`;
  return spec.short ? `-${spec.short}, ${long}` : `    ${long}`;
}

/** Two aligned columns, indented by two spaces. */
function table(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`.trimEnd());
}
