// The runtime directory is bound read-only at /.burrow in every sandbox. It carries its own Node
// and every shared library Node needs, including the dynamic loader, so envd runs the same in
// any template whatever its libc (or none): the loader is invoked directly with --library-path.
// Other programs that run on that Node (the code interpreter's execution server, the MCP gateway) sit beside envd,
// each in /.burrow/<name>, so templates need none of it installed.
import { execFile } from "node:child_process";
import { chmod, copyFile, cp, mkdir, mkdtemp, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";

const execFileAsync = promisify(execFile);

/** Where the runtime directory appears inside a sandbox. */
export const RUNTIME_MOUNT = "/.burrow";

/** envd's bundle in the runtime directory (CommonJS, whatever the source file is called). */
const ENVD_ENTRY = "envd.cjs";

/** Fixed loader name, so runtimeCommand() does not depend on the build machine's architecture. */
const LOADER_NAME = "ld.so";

export interface BuildRuntimeDirOptions {
  /** Created by the build; must not exist (running sandboxes may hold the old one). */
  outDir: string;
  files: {
    /** The bundled envd entry point: a single CommonJS file (Node starts one faster than an ES module). */
    bundle: string;
    /** Files the entry reads from its own directory (the bundle it runs, its code cache), copied beside it. */
    besideEntry?: readonly string[] | undefined;
    /** Node addons envd loads at runtime (e.g. node-pty), copied to envd/node_modules/<name>. */
    nativeModules: { name: string; dir: string }[];
    /** Further programs for the runtime's node, each directory copied whole to <name>/ (e.g. code-interpreter). */
    programs?: RuntimeProgram[] | undefined;
  };
  /** @default process.execPath */
  nodePath?: string;
  signal?: AbortSignal;
}

export interface RuntimeProgram {
  /** Directory name inside the runtime directory (a single path segment). */
  name: string;
  dir: string;
}

/** Names the runtime directory uses itself. */
const RESERVED_NAMES = new Set(["bin", "lib", "envd"]);

/**
 * argv that runs a script with the runtime's node inside a sandbox: the copied loader runs the
 * copied node against the copied libraries. Note: inside, `process.execPath` of that node is the
 * loader, so a program must not re-exec itself through process.execPath (child_process.fork).
 */
export function runtimeNodeCommand(script: string): string[] {
  return [`${RUNTIME_MOUNT}/lib/${LOADER_NAME}`, "--library-path", `${RUNTIME_MOUNT}/lib`, `${RUNTIME_MOUNT}/bin/node`, script];
}

/** argv that runs envd inside a sandbox. */
export function runtimeCommand(): string[] {
  return runtimeNodeCommand(`${RUNTIME_MOUNT}/envd/${ENVD_ENTRY}`);
}

interface LddResult {
  libs: string[];
  loader: string | undefined;
}

/** Parse `ldd` output: `name => /path (0x…)` lines and the bare loader line. */
export function parseLdd(text: string): LddResult {
  const libs: string[] = [];
  let loader: string | undefined;
  for (const line of text.split("\n")) {
    const arrow = /=>\s+(\/\S+)\s+\(0x/.exec(line);
    if (arrow?.[1]) {
      libs.push(arrow[1]);
      continue;
    }
    const bare = /^\s*(\/\S+)\s+\(0x/.exec(line);
    if (bare?.[1]) loader = bare[1];
  }
  return { libs, loader };
}

async function ldd(file: string, signal?: AbortSignal): Promise<LddResult> {
  try {
    const { stdout } = await execFileAsync("ldd", [file], { signal, env: { PATH: "/usr/bin:/bin", LANG: "C" } });
    return parseLdd(stdout);
  } catch (cause) {
    // ldd exits 1 for static binaries ("not a dynamic executable"): nothing to copy then.
    if (signal?.aborted) throw new BurrowError(Code.Canceled, "runtime build aborted", { cause });
    return { libs: [], loader: undefined };
  }
}

async function findAddons(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith(".node")) out.push(join(e.parentPath ?? e.path, e.name));
  }
  return out;
}

/** Directories 0755, files 0644 (0755 when executable by the owner): sandbox root is an unprivileged host uid. */
async function makeWorldReadable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath ?? e.path, e.name);
    if (e.isDirectory()) await chmod(path, 0o755);
    else if (e.isFile()) await chmod(path, ((await stat(path)).mode & 0o100) !== 0 ? 0o755 : 0o644);
  }
}

/** Assemble the runtime directory atomically (built under a temp name, then renamed). */
export async function buildRuntimeDir(opts: BuildRuntimeDirOptions): Promise<void> {
  const { outDir, files, signal } = opts;
  const nodePath = opts.nodePath ?? process.execPath;
  if (await stat(outDir).then(() => true, () => false)) throw new BurrowError(Code.AlreadyExists, `${outDir} already exists`);
  await mkdir(dirname(outDir), { recursive: true });
  const tmp = await mkdtemp(join(dirname(outDir), `.${basename(outDir)}.tmp-`));
  try {
    await mkdir(join(tmp, "bin"));
    await mkdir(join(tmp, "lib"));
    await mkdir(join(tmp, "envd/node_modules"), { recursive: true });
    await copyFile(nodePath, join(tmp, "bin/node"));
    await copyFile(files.bundle, join(tmp, "envd", ENVD_ENTRY));
    const beside = (files.besideEntry ?? []).map((file) => basename(file));
    if (beside.some((name) => name === ENVD_ENTRY || name === "node_modules")) {
      throw new BurrowError(Code.Internal, `a file beside envd's entry may not be called ${ENVD_ENTRY} or node_modules`, { reason: "command_failed" });
    }
    for (const file of files.besideEntry ?? []) await copyFile(file, join(tmp, "envd", basename(file)));
    for (const m of files.nativeModules) {
      if (m.name.includes("..") || m.name.startsWith("/")) throw new BurrowError(Code.Internal, `bad module name ${m.name}`, { reason: "command_failed" });
      await cp(m.dir, join(tmp, "envd/node_modules", m.name), { recursive: true, dereference: true });
    }
    const programs = files.programs ?? [];
    for (const p of programs) {
      if (!/^[a-z0-9][a-z0-9._-]*$/.test(p.name) || RESERVED_NAMES.has(p.name)) {
        throw new BurrowError(Code.Internal, `bad runtime program name ${p.name}`, { reason: "command_failed" });
      }
      await cp(p.dir, join(tmp, p.name), { recursive: true, dereference: true });
    }
    // Libraries of node and of every addon: addons may need libraries node does not (libstdc++…).
    const needed = new Map<string, string>();
    let loader: string | undefined;
    const addons = [join(tmp, "envd/node_modules"), ...programs.map((p) => join(tmp, p.name))];
    for (const file of [nodePath, ...(await Promise.all(addons.map(findAddons))).flat()]) {
      const r = await ldd(file, signal);
      for (const lib of r.libs) needed.set(basename(lib), lib);
      loader ??= r.loader;
    }
    if (!loader) throw new BurrowError(Code.Internal, `no dynamic loader found for ${nodePath}`, { reason: "command_failed" });
    for (const [name, path] of needed) await copyFile(path, join(tmp, "lib", name));
    await copyFile(loader, join(tmp, "lib", LOADER_NAME));
    await copyFile(loader, join(tmp, "lib", basename(loader)));
    // Sandbox root is an unprivileged host uid: everything must be world-readable.
    await chmod(tmp, 0o755);
    for (const f of await readdir(join(tmp, "lib"))) await chmod(join(tmp, "lib", f), 0o755);
    await chmod(join(tmp, "bin/node"), 0o755);
    for (const name of [ENVD_ENTRY, ...beside]) await chmod(join(tmp, "envd", name), 0o644);
    for (const p of programs) await makeWorldReadable(join(tmp, p.name));
    signal?.throwIfAborted();
    await rename(tmp, outDir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}
