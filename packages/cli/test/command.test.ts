// The command-line parser: options as declared, clear usage errors (exit code 2, InvalidArgument), --help on every command.
import { describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { CliError } from "../src/cli-error.js";
import { defineCommand, parseCommand } from "../src/command.js";
import { commandHelp } from "../src/help.js";

const exec = defineCommand({
  name: "exec",
  summary: "Run a command",
  args: "ID -- COMMAND...",
  minArgs: 2,
  maxArgs: Number.POSITIVE_INFINITY,
  options: {
    user: { type: "string", value: "USER", description: "Run as" },
    env: { type: "string", multiple: true, value: "K=V", description: "Variables" },
    json: { type: "boolean", description: "Print JSON" },
  },
  run: async () => undefined,
});

function usageError(argv: string[]): string {
  try {
    parseCommand(exec, "sandbox exec", argv);
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect(error).toMatchObject({ exitCode: 2, code: Code.InvalidArgument, reason: "usage" });
    return (error as CliError).message;
  }
  throw new Error(`expected a usage error for ${argv.join(" ")}`);
}

describe("parseCommand", () => {
  it("returns the given options and the positionals, keeping everything after -- as arguments", () => {
    expect(parseCommand(exec, "sandbox exec", ["--json", "abc", "--user=root", "--env", "A=1", "--env", "B=2", "--", "sh", "-c", "echo --json"])).toEqual({
      values: { json: true, user: "root", env: ["A=1", "B=2"] },
      positionals: ["abc", "sh", "-c", "echo --json"],
    });
  });

  it("answers help for -h and --help before checking arguments", () => {
    expect(parseCommand(exec, "sandbox exec", ["--help"])).toBe("help");
    expect(parseCommand(exec, "sandbox exec", ["abc", "-h"])).toBe("help");
  });

  it("names unknown options, missing values and wrong argument counts", () => {
    expect(usageError(["--frob", "abc", "ls"])).toBe("unknown option '--frob' for 'burrow sandbox exec' (see 'burrow sandbox exec --help')");
    expect(usageError(["abc", "-x", "ls"])).toMatch(/^unknown option '-x'/);
    expect(usageError(["abc", "ls", "--user"])).toMatch(/^--user needs a value/);
    // An option is not a value: `--user --json` must not run as a user called "--json".
    expect(usageError(["--user", "--json", "abc", "ls"])).toMatch(/^--user needs a value/);
    expect(usageError(["--json=yes", "abc", "ls"])).toBe("--json takes no value");
    expect(usageError(["abc"])).toBe("missing arguments for 'burrow sandbox exec'; usage: burrow sandbox exec [options] ID -- COMMAND...");
    const none = defineCommand({ name: "list", summary: "List", options: {}, run: async () => undefined });
    expect(() => parseCommand(none, "sandbox list", ["extra"])).toThrow("unexpected argument 'extra' for 'burrow sandbox list'");
  });

  it("lets a negative number through to the number check instead of calling it an option", () => {
    const pool = defineCommand({ name: "up", summary: "Up", options: { "pool-size": { type: "string", description: "Pool" } }, run: async () => undefined });
    expect(parseCommand(pool, "up", ["--pool-size", "-1"])).toEqual({ values: { "pool-size": "-1" }, positionals: [] });
  });

  it("prints every declared option in the help", () => {
    const help = commandHelp(exec, "sandbox exec");
    expect(help).toMatch(/^Usage: burrow sandbox exec \[options\] ID -- COMMAND\.\.\.\n/);
    for (const line of ["--user USER", "--env K=V", "--json", "-h, --help"]) expect(help).toContain(line);
  });
});
