#!/usr/bin/env node
// Builds everything the server runs: TypeScript packages (incremental tsc -b), the envd bundle, the code
// interpreter's runtime bundle, the MCP gateway bundle, the native sandbox launcher and the egress relay addon. Safe to run repeatedly.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function run(cmd, args, env) {
  const result = spawnSync(cmd, args, { stdio: "inherit", cwd: root, ...(env ? { env: { ...process.env, ...env } } : {}) });
  if (result.status !== 0) {
    process.stderr.write(`[build] '${cmd} ${args.join(" ")}' failed\n`);
    process.exit(result.status ?? 1);
  }
}

run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-b"]);
run(process.execPath, [join(root, "packages", "envd", "build.mjs")]);
run(process.execPath, [join(root, "packages", "code-interpreter", "build.mjs")]);
run(process.execPath, [join(root, "packages", "mcp", "build.mjs")]);
run(process.execPath, [join(root, "packages", "dashboard", "build.mjs")]);
// NODE: the egress relay addon compiles against this Node's headers.
run("bash", [join(root, "packages", "orchestrator", "native", "build.sh")], { NODE: process.execPath });
