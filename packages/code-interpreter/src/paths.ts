// Where the server's companion files are: beside the bundle in a sandbox's runtime directory (server.mjs,
// node-worker.mjs, python/), or in the package when run from its tsc output (tests, development).
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
  // dist/paths.js → dist/kernels/node/node-worker.js and <package>/python
  return { workerScript: join(here, "kernels", "node", "node-worker.js"), pythonDir: join(here, "..", "python") };
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
