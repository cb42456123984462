// `burrow` as a command: help for every command and group, clear usage errors with exit code 2, `npx burrow` from
// the checkout, and start-up that loads only what a command needs.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, inject, it } from "vitest";
import { REPO_ROOT, runBurrow, runProcess } from "./run-burrow.js";

const env = inject("burrow");
const clientEnv = { ...process.env, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, E2B_API_KEY: env.apiKey };
const scratch = mkdtempSync(join(tmpdir(), "burrow-cli-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const SANDBOX_VERBS = ["create", "list", "kill", "exec", "shell", "pause", "resume"];
const TEMPLATE_VERBS = ["build", "list", "delete"];

describe("burrow help", () => {
  it("prints the command list for --help, -h, help and no arguments", async () => {
    for (const args of [["--help"], ["-h"], ["help"], []]) {
      const result = await runBurrow(args);
      expect(result.code, args.join(" ")).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toMatch(/^burrow — /);
      expect(result.stdout).toContain("Usage: burrow <command> [options]");
      for (const command of ["up", "down", "sandbox, sbx", "template, tpl"]) expect(result.stdout).toContain(`  ${command} `);
    }
  });

  it("prints a group's commands for 'burrow sandbox --help' and 'burrow template --help'", async () => {
    const sandbox = await runBurrow(["sandbox", "--help"]);
    expect(sandbox.code).toBe(0);
    expect(sandbox.stdout).toMatch(/^Usage: burrow sandbox <command> \[options\]/);
    for (const verb of SANDBOX_VERBS) expect(sandbox.stdout).toMatch(new RegExp(`^  ${verb}\\b`, "m"));
    const template = await runBurrow(["tpl", "-h"]);
    expect(template.code).toBe(0);
    for (const verb of TEMPLATE_VERBS) expect(template.stdout).toMatch(new RegExp(`^  ${verb}\\b`, "m"));
  });

  it("prints usage and options for every command's --help, without connecting anywhere", async () => {
    // No API key and an API nobody listens on: help must not need either.
    const offline = { ...process.env, E2B_API_URL: "http://127.0.0.1:9", E2B_API_KEY: "", BURROW_STATE_DIR: scratch };
    const paths = [["up"], ["down"], ...SANDBOX_VERBS.map((v) => ["sandbox", v]), ...TEMPLATE_VERBS.map((v) => ["template", v])];
    for (const path of paths) {
      const result = await runBurrow([...path, "--help"], { env: offline });
      expect(result.code, `${path.join(" ")}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: burrow ${path.join(" ")}\\b`));
      expect(result.stdout).toContain("-h, --help");
    }
    const up = await runBurrow(["help", "up"], { env: offline });
    for (const flag of ["--port PORT", "--host HOST", "--state-dir DIR", "--pool-size N", "--instance NAME", "--subnet CIDR", "--bus SPEC"]) {
      expect(up.stdout).toContain(flag);
    }
  });
});

describe("burrow usage errors", () => {
  it("rejects unknown commands, options and arguments with one line and exit code 2", async () => {
    const cases: [string[], string][] = [
      [["frobnicate"], "burrow: unknown command 'frobnicate' (see 'burrow --help')\n"],
      [["sandbox", "lsit"], "burrow: unknown sandbox command 'lsit' (did you mean 'list'? see 'burrow sandbox --help')\n"],
      [["--verbose"], "burrow: unknown option '--verbose' (see 'burrow --help')\n"],
      [["sandbox", "list", "--all"], "burrow: unknown option '--all' for 'burrow sandbox list' (see 'burrow sandbox list --help')\n"],
      [["sandbox", "list", "extra"], "burrow: unexpected argument 'extra' for 'burrow sandbox list' (see 'burrow sandbox list --help')\n"],
      [["sandbox", "kill"], "burrow: missing arguments for 'burrow sandbox kill'; usage: burrow sandbox kill [options] ID...\n"],
      [["sandbox", "create", "--timeout", "soon"], "burrow: --timeout must be a positive integer, got 'soon'\n"],
      [["sandbox", "list", "--state", "stopped"], "burrow: --state takes running, paused or running,paused, got 'stopped'\n"],
    ];
    for (const [args, stderr] of cases) {
      const result = await runBurrow(args, { env: clientEnv });
      expect(result.stderr, args.join(" ")).toBe(stderr);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stdout).toBe("");
    }
  });

  it("rejects a bad orchestrator or server variable before starting anything, naming it", async () => {
    const stateDir = join(scratch, "never-created-either");
    for (const [variable, value, stderr] of [
      ["BURROW_SUBNET", "10.0.0.0/8", "burrow: BURROW_SUBNET must be a prefix from /12 to /30, got '10.0.0.0/8'\n"],
      ["BURROW_UPLOAD_MAX_BYTES", "1GB", "burrow: BURROW_UPLOAD_MAX_BYTES must be a positive integer, got '1GB'\n"],
      ["BURROW_MAX_SANDBOXES", "lots", "burrow: BURROW_MAX_SANDBOXES must be a positive integer, got 'lots'\n"],
    ] as const) {
      const result = await runBurrow(["up", "--state-dir", stateDir], { env: { ...process.env, [variable]: value } });
      expect(result.stderr, variable).toBe(stderr);
      expect(result.code, variable).toBe(2);
    }
    expect(existsSync(stateDir)).toBe(false);
  });

  it("rejects a bad --pool-size or BURROW_POOL_SIZE before starting anything", async () => {
    const stateDir = join(scratch, "never-created");
    const flag = await runBurrow(["up", "--state-dir", stateDir, "--pool-size", "abc"]);
    expect(flag.stderr).toBe("burrow: --pool-size must be a non-negative integer, got 'abc'\n");
    expect(flag.code).toBe(2);
    const variable = await runBurrow(["up", "--state-dir", stateDir], { env: { ...process.env, BURROW_POOL_SIZE: "1.5" } });
    expect(variable.stderr).toBe("burrow: BURROW_POOL_SIZE must be a non-negative integer, got '1.5'\n");
    expect(variable.code).toBe(2);
    for (const args of [["--pool-size"], ["--pool-size", "--bus", "embedded"], ["--port", "99999"]]) {
      const result = await runBurrow(["up", "--state-dir", stateDir, ...args]);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toMatch(/^burrow: --(pool-size needs a value|port must be at most 65535)/);
    }
    expect(existsSync(stateDir)).toBe(false);
  });
});

describe("burrow from the checkout", () => {
  it("runs as `npx burrow` in the repository, without the registry", async () => {
    // --no: never install a package called `burrow` from the registry; only the checkout's own bin may answer.
    const result = await runProcess("npx", ["--no", "--", "burrow", "--help"], { cwd: REPO_ROOT });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Usage: burrow <command> [options]");
    const rootPackage = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { bin?: Record<string, string> };
    expect(rootPackage.bin?.burrow).toBe("packages/cli/bin/burrow.js");
  });

  it("is an executable file that runs on its own", async () => {
    const result = await runProcess(join(REPO_ROOT, "packages", "cli", "bin", "burrow.js"), ["--version"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^burrow \d+\.\d+\.\d+\n$/);
  });
});

describe("burrow start-up", () => {
  // A module hook records every module the CLI loads, so the test sees what a command pulls in.
  const hookLog = join(scratch, "loaded.txt");
  const hook = join(scratch, "hook.mjs");
  const register = join(scratch, "register.mjs");
  writeFileSync(
    hook,
    `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(hookLog)}, result.url + "\\n");
  return result;
}
`,
  );
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hook).href)});\n`);

  async function loadedBy(args: string[]): Promise<string[]> {
    rmSync(hookLog, { force: true });
    const result = await runBurrow(args, { env: clientEnv, nodeArgs: ["--import", register] });
    expect(result.code, result.stderr).toBe(0);
    return readFileSync(hookLog, "utf8").trim().split("\n");
  }

  const HEAVY = [/\/packages\/(server|orchestrator|bus|envd)\//, /\/node_modules\/(e2b|fastify|pino|prom-client|better-sqlite3)\//];

  it("lists sandboxes with neither the server's packages nor the SDK loaded", async () => {
    for (const args of [["sandbox", "list"], ["sandbox", "list", "--help"], ["--help"]]) {
      const loaded = await loadedBy(args);
      expect(loaded.some((url) => url.endsWith("/packages/cli/dist/main.js")), args.join(" ")).toBe(true);
      expect(loaded.filter((url) => HEAVY.some((pattern) => pattern.test(url))), args.join(" ")).toEqual([]);
    }
  });
});
