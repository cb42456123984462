// How a configured server is started: the program, its arguments and environment, as the sandbox's `user`. The
// environment is built from scratch (never the gateway's, which holds the access token), and a template without
// its own `node` still runs Node servers: the runtime's node comes last on PATH.
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import { GatewayConfigError, type ServerConfig } from "./gateway-config.js";

export interface Account {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export interface SpawnSpec {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The account MCP servers run as, from /etc/passwd (`user` in E2B-style templates). */
export function lookupAccount(name: string, passwdFile = "/etc/passwd"): Account {
  for (const line of readFileSync(passwdFile, "utf8").split("\n")) {
    const [login, , uid, gid, , home] = line.split(":");
    if (login === name && uid !== undefined && gid !== undefined) {
      return { name, uid: Number(uid), gid: Number(gid), home: home || "/" };
    }
  }
  throw new GatewayConfigError(`user '${name}' does not exist in this template`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable called `name` on `path`, like the shell's lookup. */
export function which(name: string, path: string): string | undefined {
  if (name.includes("/")) return isExecutable(name) ? resolve(name) : undefined;
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function packageRoots(cwd: string, account: Account): string[] {
  const roots = [join(cwd, "node_modules"), join(account.home, "node_modules"), "/usr/local/lib/node_modules", "/usr/lib/node_modules"];
  return [...new Set(roots)];
}

/** The script an installed npm package runs as its command (package.json `bin`). */
export function npmBin(pkg: string, binName: string | undefined, roots: readonly string[]): string {
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(pkg)) throw new GatewayConfigError(`'${pkg}' is not an npm package name`);
  const dir = roots.map((root) => join(root, pkg)).find((d) => {
    try {
      return statSync(join(d, "package.json")).isFile();
    } catch {
      return false;
    }
  });
  if (!dir) throw new GatewayConfigError(`npm package '${pkg}' is not installed in the template (looked in ${roots.join(", ")})`);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { bin?: string | Record<string, string> };
  const bins: Record<string, string> =
    typeof manifest.bin === "string" ? { [pkg.split("/").pop()!]: manifest.bin } : (manifest.bin ?? {});
  const names = Object.keys(bins);
  const chosen = binName ?? (names.length === 1 ? names[0] : names.find((n) => n === pkg.split("/").pop()));
  const script = chosen === undefined ? undefined : bins[chosen];
  if (script === undefined) {
    throw new GatewayConfigError(
      names.length === 0
        ? `npm package '${pkg}' has no command (no "bin" in its package.json)`
        : `npm package '${pkg}' has several commands (${names.join(", ")}): choose one with "bin"`,
    );
  }
  return join(dir, script);
}

export interface ServerCommandOptions {
  account: Account;
  /** Directories searched after the system's (the runtime's node). */
  fallbackPath?: string | undefined;
}

export function serverCommand(name: string, config: ServerConfig, opts: ServerCommandOptions): SpawnSpec {
  const { account } = opts;
  const cwd = config.cwd ?? account.home;
  if (!isDirectory(cwd)) throw new GatewayConfigError(`server '${name}': working directory '${cwd}' does not exist`);
  const basePath = [`${account.home}/.local/bin`, SYSTEM_PATH, opts.fallbackPath].filter(Boolean).join(delimiter);
  const env: Record<string, string> = {
    PATH: basePath,
    HOME: account.home,
    USER: account.name,
    LOGNAME: account.name,
    LANG: "C.UTF-8",
    ...config.env,
  };
  const path = env.PATH ?? basePath;
  const find = (program: string, what: string): string => {
    const found = which(program, path);
    if (!found) throw new GatewayConfigError(`server '${name}': ${what} '${program}' not found (PATH=${path})`);
    return found;
  };
  const args = config.args ?? [];
  if ("command" in config) return { file: find(config.command, "command"), args, env, cwd };
  if ("npm" in config) {
    const script = npmBin(config.npm, config.bin, packageRoots(cwd, account));
    return { file: find("node", "program"), args: [script, ...args], env, cwd };
  }
  return { file: find("python3", "program"), args: ["-m", config.python, ...args], env, cwd };
}
