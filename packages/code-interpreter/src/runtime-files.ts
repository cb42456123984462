// What the orchestrator copies into the read-only runtime directory (mounted at /.burrow in every sandbox) for
// code-interpreter sandboxes: build.mjs assembles it in dist/runtime (server.mjs, node-worker.mjs, python/ and
// the native modules the server loads).
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Directory name of the execution server inside the runtime directory. */
export const RUNTIME_PROGRAM_NAME = "code-interpreter";

export interface RuntimeProgram {
  /** Directory name under the runtime mount (/.burrow/<name>). */
  name: string;
  /** Directory whose contents are copied there. */
  dir: string;
}

export function codeInterpreterRuntimeFiles(): RuntimeProgram {
  // src/ and dist/ both sit one level below the package root
  const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)));
  return { name: RUNTIME_PROGRAM_NAME, dir: join(pkgDir, "dist", "runtime") };
}
