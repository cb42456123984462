// burrow-sandbox is built from packages/orchestrator/native into packages/orchestrator/dist/native.
// This file sits at src/launcher/ and compiles to dist/launcher/: both are two levels below the package.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { LaunchError } from "./launch-error.js";

const PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));

/** Where buildNative() puts the launcher by default. Overridden by BURROW_SANDBOX_BIN. */
export function launcherBinaryPath(): string {
  return process.env["BURROW_SANDBOX_BIN"] ?? `${PACKAGE_DIR}dist/native/burrow-sandbox`;
}

export interface BuildNativeOptions {
  /** @default packages/orchestrator/dist/native */
  outDir?: string;
  signal?: AbortSignal;
}

/** Compile burrow-sandbox (gcc + libseccomp). A no-op when the binary is newer than its sources. */
export function buildNative(opts: BuildNativeOptions = {}): Promise<string> {
  const outDir = opts.outDir ?? `${PACKAGE_DIR}dist/native`;
  return new Promise((resolve, reject) => {
    const child = spawn("sh", [`${PACKAGE_DIR}native/build.sh`, outDir], {
      stdio: ["ignore", "ignore", "pipe"],
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", (err) => reject(new LaunchError("build_failed", `cannot run build.sh: ${err.message}`, { cause: err })));
    child.on("close", (code) => {
      if (code === 0) resolve(`${outDir}/burrow-sandbox`);
      else reject(new LaunchError("build_failed", `build.sh exited ${code}: ${stderr.trim()}`));
    });
  });
}
