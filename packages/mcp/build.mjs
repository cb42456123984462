// Builds what mcp-gateway sandboxes run from the read-only runtime mount (/.burrow/mcp-gateway):
//   gateway.mjs   the MCP gateway (esbuild bundle of src/gateway/main.ts with the MCP SDK inside), run by the
//                 template's `mcp-gateway` command with the runtime's node
// Output: dist/runtime. Run after `tsc -b` (scripts/build.mjs does).
import { build } from "esbuild";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = dirname(fileURLToPath(import.meta.url));
const outDir = join(pkgDir, "dist", "runtime");
const tmpDir = join(pkgDir, "dist", `.runtime-${process.pid}`);

const version = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;
rmSync(tmpDir, { recursive: true, force: true });
mkdirSync(tmpDir, { recursive: true });
try {
  await build({
    entryPoints: [join(pkgDir, "src", "gateway", "main.ts")],
    outfile: join(tmpDir, "gateway.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    minifySyntax: true,
    legalComments: "none",
    logLevel: "warning",
    // Bundled CommonJS dependencies call require() for Node's own modules.
    banner: { js: `// Burrow MCP gateway ${version}.\nimport { createRequire as __burrowRequire } from "node:module";\nconst require = __burrowRequire(import.meta.url);` },
  });
  if (!existsSync(join(tmpDir, "gateway.mjs"))) throw new Error("gateway bundle missing");
  // Replaced as a whole: the orchestrator hashes the directory to name its runtime.
  rmSync(outDir, { recursive: true, force: true });
  renameSync(tmpDir, outDir);
} catch (error) {
  rmSync(tmpDir, { recursive: true, force: true });
  throw error;
}
