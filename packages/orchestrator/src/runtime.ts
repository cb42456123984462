// The read-only envd runtime every sandbox mounts at /.burrow: node, its libraries and the envd bundle.
// Content-addressed, so a new envd build gets a new directory while running sandboxes keep theirs.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { buildRuntimeDir, runtimeCommand } from "./rootfs/index.js";

export interface EnvdRuntimeSource {
  /** The envd bundle file (envd.mjs). */
  bundle: string;
  /** Native node modules envd loads lazily (node-pty, xattr addon…). */
  nativeModules: { name: string; dir: string }[];
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
  for (const module of envd.nativeModules) {
    const info = await stat(module.dir);
    hash.update(`${module.name}:${module.dir}:${info.mtimeMs}\n`);
  }
  return hash.digest("hex").slice(0, 16);
}

export async function ensureRuntime(opts: {
  runtimeRoot: string;
  envd: EnvdRuntimeSource;
  signal?: AbortSignal;
}): Promise<Runtime> {
  const dir = join(opts.runtimeRoot, await runtimeHash(opts.envd));
  if (!existsSync(dir)) {
    await mkdir(opts.runtimeRoot, { recursive: true });
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await buildRuntimeDir({ outDir: tmp, files: opts.envd });
    opts.signal?.throwIfAborted();
    await rename(tmp, dir);
  }
  return { dir, command: runtimeCommand() };
}
