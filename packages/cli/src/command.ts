// A command is a declaration (name, options, positional arguments, help text) plus a handler. The declaration is
// all the parser and the help printer need, so a command's module stays cheap to import: handlers import what
// they run on (the SDK, the orchestrator, the server) lazily, when they run.
import { parseArgs } from "node:util";
import { Code } from "@burrow/protocol";
import { CliError } from "./cli-error.js";
import type { Env } from "./config.js";

export interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly short?: string;
  /** Repeatable: the values are collected in an array. */
  readonly multiple?: boolean;
  /** Placeholder for the value in help, e.g. "SECONDS". */
  readonly value?: string;
  readonly description: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** What the parser returns for a command's options: only the flags that were given. */
export type OptionValues<O extends OptionSpecs> = {
  [K in keyof O]?: O[K]["type"] extends "boolean" ? boolean : O[K]["multiple"] extends true ? string[] : string;
};

export interface CommandInput<O extends OptionSpecs> {
  readonly values: OptionValues<O>;
  readonly positionals: readonly string[];
  /** The process's environment, read once by the entry point (main.ts): commands resolve their settings from it. */
  readonly env: Env;
}

export interface Command<O extends OptionSpecs = OptionSpecs> {
  readonly name: string;
  readonly aliases?: readonly string[];
  /** One line for the command lists. */
  readonly summary: string;
  /** Positional arguments as shown after the options in the usage line, e.g. "ID..." or "ID -- COMMAND...". */
  readonly args?: string;
  /** How many positional arguments the command takes. @default 0 */
  readonly minArgs?: number;
  /** @default minArgs */
  readonly maxArgs?: number;
  /** Paragraphs printed after the option list. */
  readonly notes?: string;
  readonly options: O;
  // Method syntax on purpose: a Command<{json…}> must be usable where a Command<OptionSpecs> is expected.
  run(input: CommandInput<O>): Promise<void>;
}

export interface CommandGroup {
  readonly name: string;
  readonly aliases?: readonly string[];
  readonly summary: string;
  readonly commands: readonly Command[];
}

/** Identity, so that TypeScript infers the options' literal types for the handler. */
export function defineCommand<const O extends OptionSpecs>(command: Command<O>): Command<O> {
  return command;
}

export function usageError(message: string): CliError {
  return new CliError(Code.InvalidArgument, message, { reason: "usage", exitCode: 2 });
}

export function matchesName(entry: { name: string; aliases?: readonly string[] }, word: string): boolean {
  return entry.name === word || (entry.aliases?.includes(word) ?? false);
}

export const HELP_OPTION: OptionSpec = { type: "boolean", short: "h", description: "Show this help" };

/**
 * Parse a command's arguments, or return "help" when -h/--help was given. Unknown options, missing values and a
 * wrong number of positional arguments are usage errors (exit code 2) that name the offending flag; values are
 * validated by the command (numbers: see numbers.ts).
 */
export function parseCommand<O extends OptionSpecs>(
  command: Command<O>,
  path: string,
  argv: readonly string[],
): Omit<CommandInput<O>, "env"> | "help" {
  const options = { ...command.options, help: HELP_OPTION };
  // Non-strict, with tokens: node's strict errors are long and generic, and these checks name the command.
  const { values, positionals, tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.entries(options).map(([name, spec]) => [
        name,
        { type: spec.type, ...(spec.short ? { short: spec.short } : {}), ...(spec.multiple ? { multiple: true } : {}) },
      ]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const spec = options[token.name];
    if (!spec) throw usageError(`unknown option '${token.rawName}' for 'burrow ${path}' (see 'burrow ${path} --help')`);
    if (spec.type === "boolean" && token.inlineValue) throw usageError(`${token.rawName} takes no value`);
    if (spec.type === "string") {
      // `--pool-size --json` must not take "--json" as the value; `--pool-size -1` reaches the number check.
      const value = token.value;
      if (value === undefined || (!token.inlineValue && value.startsWith("-") && !/^-\d/.test(value))) {
        throw usageError(`${token.rawName} needs a value (see 'burrow ${path} --help')`);
      }
    }
  }
  if (values.help === true) return "help";
  const min = command.minArgs ?? 0;
  const max = command.maxArgs ?? min;
  if (positionals.length < min) {
    throw usageError(`missing arguments for 'burrow ${path}'; usage: burrow ${path} ${usageTail(command)}`);
  }
  if (positionals.length > max) {
    throw usageError(`unexpected argument '${positionals[max]}' for 'burrow ${path}' (see 'burrow ${path} --help')`);
  }
  delete values.help;
  return { values: values as OptionValues<O>, positionals };
}

/** The part of the usage line after the command's name. */
export function usageTail(command: Command): string {
  const options = Object.keys(command.options).length > 0 ? "[options]" : "";
  return [options, command.args ?? ""].filter(Boolean).join(" ");
}
