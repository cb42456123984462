// The read-only envd runtime every sandbox mounts at /.burrow: node, its libraries and the envd bundle.
// Content-addressed, so a new envd build gets a new directory while running sandboxes keep theirs.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import type { RuntimeProgram } from "./rootfs/build-runtime-dir.js";
import { buildRuntimeDir, runtimeCommand } from "./rootfs/index.js";

export interface EnvdRuntimeSource {
  /** envd's entry file (envd.cjs). */
  bundle: string;
  /** Files the entry reads beside itself (its bundle and code cache). */
  besideEntry?: readonly string[] | undefined;
  /** Native node modules envd loads lazily (node-pty, xattr addon…). */
  nativeModules: { name: string; dir: string }[];
  /**
   * Other programs run with the runtime's node, each copied to /.burrow/<name> (the code interpreter's execution
   * server). One whose directory is missing (not built) is left out.
   */
  programs?: RuntimeProgram[] | undefined;
}

export interface Runtime {
  dir: string;
  command: string[];
}

async function runtimeHash(envd: EnvdRuntimeSource): Promise<string> {
  const hash = createHash("sha256");
  const node = await stat(process.execPath);
  hash.update(`${process.execPath}:${node.size}:${node.mtimeMs}:${process.version}\n`);
  hash.update(await readFile(envd.bundle));
  for (const file of envd.besideEntry ?? []) hash.update(await readFile(file));
  for (const module of envd.nativeModules) {
    const info = await stat(module.dir);
    hash.update(`${module.name}:${module.dir}:${info.mtimeMs}\n`);
  }
  for (const program of envd.programs ?? []) {
    hash.update(`program ${program.name}\n`);
    const files = (await readdir(program.dir, { withFileTypes: true, recursive: true }))
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath ?? e.path, e.name))
      .sort();
    for (const path of files) {
      const info = await stat(path);
      hash.update(`${relative(program.dir, path)}:${info.size}:${info.mtimeMs}\n`);
    }
  }
  return hash.digest("hex").slice(0, 16);
}

export async function ensureRuntime(opts: {
  runtimeRoot: string;
  envd: EnvdRuntimeSource;
  signal?: AbortSignal;
}): Promise<Runtime> {
  const envd = { ...opts.envd, programs: (opts.envd.programs ?? []).filter((p) => existsSync(p.dir)) };
  const dir = join(opts.runtimeRoot, await runtimeHash(envd));
  if (!existsSync(dir)) {
    await mkdir(opts.runtimeRoot, { recursive: true });
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await buildRuntimeDir({ outDir: tmp, files: envd });
    opts.signal?.throwIfAborted();
    await rename(tmp, dir);
  }
  return { dir, command: runtimeCommand() };
}
