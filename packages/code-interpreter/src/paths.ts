// Where the server's companion files are: beside the bundle in a sandbox's runtime directory (server.mjs,
// node-worker.mjs, python/), or in the package when run from its tsc output or source (tests, development).
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export interface CompanionFiles {
  workerScript: string;
  pythonDir: string;
}

export function companionFiles(): CompanionFiles {
  const bundled = join(here, "node-worker.mjs");
  if (existsSync(bundled)) return { workerScript: bundled, pythonDir: join(here, "python") };
  // From tsc output (dist/paths.js) or from source under a TypeScript-aware runner (src/paths.ts, tests): the
  // worker is always the compiled one, python/ sits at the package root.
  const compiled = join(here, "kernels", "node", "node-worker.js");
  const workerScript = existsSync(compiled) ? compiled : join(here, "..", "dist", "kernels", "node", "node-worker.js");
  return { workerScript, pythonDir: join(here, "..", "python") };
}

/**
 * argv that starts Node like this process was started. In a sandbox this process runs through the runtime's own
 * loader (`/.burrow/lib/ld.so --library-path /.burrow/lib /.burrow/bin/node`), where process.execPath names the
 * loader, so the loader's arguments are rebuilt.
 */
export function nodeCommand(execPath = process.execPath): string[] {
  if (execPath.endsWith("/ld.so")) {
    const lib = dirname(execPath);
    return [execPath, "--library-path", lib, join(dirname(lib), "bin", "node")];
  }
  return [execPath];
}
