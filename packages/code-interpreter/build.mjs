// Builds what code-interpreter sandboxes run from the read-only runtime mount (/.burrow/code-interpreter):
//   server.mjs       the execution server (esbuild bundle of src/main.ts)
//   node-worker.mjs  the process behind each JavaScript/TypeScript context
//   python/          the IPython extension (rich results, chart data) and kernel config
//   node_modules/    what the bundle loads at run time: zeromq (its prebuilt addon for this platform, shipped in
//                    the npm package; libzmq is linked into it statically) with its loader, and esbuild (TypeScript
//                    cells) with its platform binary.
// Output: dist/runtime. Run after `tsc -b` (scripts/build.mjs does).
import { build } from "esbuild";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = dirname(fileURLToPath(import.meta.url));
const outDir = join(pkgDir, "dist", "runtime");
const tmpDir = join(pkgDir, "dist", `.runtime-${process.pid}`);


/** A package's directory as Node would find it from `from` (works for packages whose exports hide package.json). */
function packageDir(name, from = pkgDir) {
  const paths = createRequire(join(from, "package.json")).resolve.paths(name) ?? [];
  const found = paths.map((dir) => join(dir, name)).find((dir) => existsSync(join(dir, "package.json")));
  if (!found) throw new Error(`package ${name} not found from ${from}`);
  return found;
}

function copyFiltered(src, dest, keep = () => true) {
  cpSync(src, dest, { recursive: true, dereference: true, filter: (path) => keep(path) });
}

async function bundle() {
  const version = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;
  const common = { bundle: true, platform: "node", format: "esm", target: "node20", minifySyntax: true, legalComments: "none", logLevel: "warning" };
  await build({
    ...common,
    entryPoints: [join(pkgDir, "src", "main.ts")],
    outfile: join(tmpDir, "server.mjs"),
    external: ["zeromq", "esbuild"],
    banner: { js: `// Burrow code interpreter ${version}. Native modules load from ./node_modules next to this file.` },
  });
  await build({ ...common, entryPoints: [join(pkgDir, "src", "kernels", "node", "node-worker.ts")], outfile: join(tmpDir, "node-worker.mjs") });
}

function stagePython() {
  copyFiltered(join(pkgDir, "python"), join(tmpDir, "python"), (path) => !path.includes("__pycache__") && !path.endsWith(".pyc"));
}

function stageNodeModules() {
  const nm = join(tmpDir, "node_modules");
  const arch = process.arch;
  // zeromq: its JS, its manifest and the prebuilt addons for this OS and architecture only (the package carries
  // every platform's, 34 MB).
  const zmq = packageDir("zeromq");
  const zmqOut = join(nm, "zeromq");
  mkdirSync(join(zmqOut, "build"), { recursive: true });
  cpSync(join(zmq, "package.json"), join(zmqOut, "package.json"));
  cpSync(join(zmq, "LICENSE.txt"), join(zmqOut, "LICENSE.txt"));
  copyFiltered(join(zmq, "lib"), join(zmqOut, "lib"), (path) => !path.includes("ts3.7") && !path.endsWith(".map") && !path.endsWith(".d.ts"));
  cpSync(join(zmq, "build", "manifest.json"), join(zmqOut, "build", "manifest.json"));
  cpSync(join(zmq, "build", "linux", arch), join(zmqOut, "build", "linux", arch), { recursive: true });
  // cmake-ts: only the addon loader zeromq requires at run time (no dependencies of its own).
  const cmakeTs = packageDir("cmake-ts", zmq);
  const cmakeOut = join(nm, "cmake-ts");
  mkdirSync(join(cmakeOut, "build"), { recursive: true });
  cpSync(join(cmakeTs, "package.json"), join(cmakeOut, "package.json"));
  for (const file of ["loader.js", "loader.mjs"]) cpSync(join(cmakeTs, "build", file), join(cmakeOut, "build", file));
  // esbuild: the JS API and this platform's binary.
  const esbuildDir = packageDir("esbuild");
  const esbuildOut = join(nm, "esbuild");
  mkdirSync(join(esbuildOut, "lib"), { recursive: true });
  for (const file of ["package.json", "LICENSE.md", "lib/main.js"]) cpSync(join(esbuildDir, file), join(esbuildOut, file));
  const platformPkg = `@esbuild/linux-${arch}`;
  const platformDir = packageDir(platformPkg, esbuildDir);
  copyFiltered(platformDir, join(nm, platformPkg), (path) => !path.endsWith("README.md"));
}

function checkLayout() {
  const missing = ["server.mjs", "node-worker.mjs", "python/kernel_config.py", "python/burrow_kernel/__init__.py", "node_modules/zeromq/lib/index.js"].filter(
    (f) => !existsSync(join(tmpDir, f)),
  );
  if (missing.length > 0) throw new Error(`runtime build incomplete, missing: ${missing.join(", ")}`);
  if (readdirSync(join(tmpDir, "node_modules", "zeromq", "build", "linux", process.arch)).length === 0) throw new Error("no zeromq addon for this platform");
}

rmSync(tmpDir, { recursive: true, force: true });
mkdirSync(tmpDir, { recursive: true });
try {
  await bundle();
  stagePython();
  stageNodeModules();
  checkLayout();
  // Replaced as a whole (a new directory, renamed into place): the orchestrator hashes the directory to name its
  // runtime, and never sees a half-written one.
  rmSync(outDir, { recursive: true, force: true });
  renameSync(tmpDir, outDir);
} catch (error) {
  rmSync(tmpDir, { recursive: true, force: true });
  throw error;
}

