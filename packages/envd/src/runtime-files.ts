import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { NATIVE_PACKAGE } from "./native/native-modules.js";

export interface EnvdRuntimeFiles {
  /** Absolute path of envd's entry (CommonJS); copy it to `<runtime>/envd.cjs`. */
  bundle: string;
  /** Files the entry reads beside itself (the bundle it runs and V8's code cache for it), copied next to it. */
  besideEntry: string[];
  /** Directories to copy to `<runtime>/node_modules/<name>` (native addons the bundle loads beside itself). */
  nativeModules: { name: string; dir: string }[];
}

/**
 * What the orchestrator must copy into the read-only runtime directory (besides the node binary).
 * Run `node packages/envd/build.mjs` first; the paths are where that build writes.
 */
export function envdRuntimeFiles(): EnvdRuntimeFiles {
  // works from src/ (ts) and dist/ (tsc output): both sit one level below the package root
  const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)));
  const dist = join(pkgDir, "dist");
  return {
    bundle: join(dist, "envd.cjs"),
    // the cache is missing when the build could not make it: envd starts without it
    besideEntry: [join(dist, "envd-main.cjs"), join(dist, "envd-main.cache")].filter((file) => existsSync(file)),
    // staged by build.mjs: node-pty trimmed to its Linux runtime files, envd's addon and envd-exec helper
    nativeModules: ["node-pty", NATIVE_PACKAGE].map((name) => ({ name, dir: join(dist, "node_modules", name) })),
  };
}
