// Builds envd's runtime: the single-file bundle (dist/envd-main.cjs), the entry that runs it through V8's code cache
// (dist/envd.cjs, with the cache in dist/envd-main.cache) and the native pieces (native/build: the
// xattr/inotify addon and the envd-exec privilege-drop helper). The native parts compile with the system C
// compiler against the running Node's headers, so the build needs no network (node-gyp would download headers).
import { build } from "esbuild";
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout } from "node:timers/promises";
import { fileURLToPath } from "node:url";

const pkgDir = dirname(fileURLToPath(import.meta.url));
const distDir = join(pkgDir, "dist");
const nativeSrc = join(pkgDir, "native");
const nativeOut = join(nativeSrc, "build");
const NATIVE_NAME = "burrow-envd-native";

function nodeIncludeDir() {
  const candidates = [join(dirname(dirname(process.execPath)), "include", "node"), "/usr/include/node"];
  const found = candidates.find((d) => existsSync(join(d, "node_api.h")));
  if (!found) throw new Error(`node_api.h not found in ${candidates.join(", ")}`);
  return found;
}

function buildNative() {
  mkdirSync(nativeOut, { recursive: true });
  const cc = process.env.CC ?? "cc";
  const flags = ["-O2", "-Wall", "-Wextra", "-Werror"];
  execFileSync(cc, [...flags, "-shared", "-fPIC", `-I${nodeIncludeDir()}`, join(nativeSrc, "envd_native.c"),
    "-o", join(nativeOut, "envd_native.node")], { stdio: "inherit" });
  execFileSync(cc, [...flags, join(nativeSrc, "envd_exec.c"), "-o", join(nativeOut, "envd-exec")], { stdio: "inherit" });
  writeFileSync(join(nativeOut, "package.json"),
    JSON.stringify({ name: NATIVE_NAME, version: "0.1.0", private: true, main: "envd_native.node" }, null, 2) + "\n");
}

// dist/node_modules mirrors the runtime layout (<dir of envd.mjs>/node_modules/<name>), so the bundle runs in place
// and the orchestrator copies exactly these directories. node-pty is trimmed to what loads at runtime on Linux
// (its package ships ~60 MB of prebuilds for other platforms and its C++ sources).
function stageNativeModules() {
  const require = createRequire(import.meta.url);
  const ptyDir = dirname(require.resolve("node-pty/package.json"));
  const nm = join(distDir, "node_modules");
  const ptyOut = join(nm, "node-pty");
  rmSync(ptyOut, { recursive: true, force: true });
  mkdirSync(join(ptyOut, "build", "Release"), { recursive: true });
  cpSync(join(ptyDir, "package.json"), join(ptyOut, "package.json"));
  cpSync(join(ptyDir, "LICENSE"), join(ptyOut, "LICENSE"));
  cpSync(join(ptyDir, "lib"), join(ptyOut, "lib"), { recursive: true, filter: (src) => !src.endsWith(".test.js") && !src.endsWith(".map") });
  cpSync(join(ptyDir, "build", "Release", "pty.node"), join(ptyOut, "build", "Release", "pty.node"));
  const nativeStaged = join(nm, NATIVE_NAME);
  rmSync(nativeStaged, { recursive: true, force: true });
  cpSync(nativeOut, nativeStaged, { recursive: true });
}

// Burrow's error module needs only Connect's `Code` enum, but importing it from the package's index evaluates all of
// connect-es and protobuf's runtime (descriptor boot included): over a third of envd's start-up, before it can
// answer /health, although the design loads Connect after /init (server.ts). Inside that module the import is
// resolved to the file that defines the enum: the same values, without the rest.
const require = createRequire(import.meta.url);
const connectCodeFile = join(dirname(dirname(require.resolve("@connectrpc/connect"))), "esm", "code.js");
const connectCodeOnly = {
  name: "connect-code-only",
  setup(builder) {
    builder.onResolve({ filter: /^@connectrpc\/connect$/ }, (args) =>
      /[\\/]protocol[\\/](dist|src)[\\/]errors[\\/]/.test(args.importer) ? { path: connectCodeFile } : undefined,
    );
  },
};

// CommonJS, not an ES module: Node 20 starts a CommonJS entry noticeably faster (no ESM loader to set up), and
// envd's start-up is on the path of every sandbox creation. The dynamic import of routes.ts stays lazy inside the
// single file (esbuild evaluates that module on first import), so Connect and protobuf load after /init.
async function bundle() {
  const version = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;
  rmSync(join(distDir, "envd.mjs"), { force: true }); // the ES module bundle of earlier builds
  await build({
    entryPoints: [join(pkgDir, "src", "main.ts")],
    outfile: join(distDir, "envd-main.cjs"),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["node-pty", NATIVE_NAME],
    minifySyntax: true,
    legalComments: "none",
    // Native modules are found beside the bundle (createRequire(import.meta.url) in native-modules.ts).
    define: { "import.meta.url": "__envdBundleUrl" },
    banner: {
      js:
        `// Burrow envd ${version} bundle. Native modules load from ./node_modules next to this file.\n` +
        `const __envdBundleUrl = require("node:url").pathToFileURL(__filename).href;`,
    },
    plugins: [connectCodeOnly],
    logLevel: "warning",
  });
}

// The entry the runtime starts (dist/envd.cjs): runs envd-main.cjs through V8's code cache (cached-entry.ts).
async function bundleEntry() {
  await build({
    entryPoints: [join(pkgDir, "src", "cached-entry.ts")],
    outfile: join(distDir, "envd.cjs"),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minifySyntax: true,
    legalComments: "none",
    logLevel: "warning",
  });
}

// The cache is made by this node, the one the runtime copies into every sandbox, with no flags (V8 refuses a
// cache made under other flags). envd listens on a loopback port of its own choosing for the moment it runs; once it
// has loaded its routes, code-cache-warm-up.mjs sends it a sandbox's first requests, then SIGUSR2 has it write the
// cache. Without a cache envd still starts, only slower, and without the warm-up the cache still holds start-up: a
// failure here is reported, not fatal.
/** envd loads its routes 100 ms after it listens (server.ts); the warm-up waits that long before its requests. */
const ROUTES_LOADED_MS = 300;
const CACHE_TIMEOUT_MS = 30_000;

async function writeCodeCache() {
  const cache = join(distDir, "envd-main.cache");
  const scratch = mkdtempSync(join(tmpdir(), "burrow-envd-cache-"));
  rmSync(cache, { force: true });
  const child = spawn(process.execPath, [join(distDir, "envd.cjs")], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ENVD_PORT: "0", ENVD_HOST: "127.0.0.1", BURROW_ENVD_WRITE_CODE_CACHE: cache },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const signal = AbortSignal.timeout(CACHE_TIMEOUT_MS);
  try {
    const port = await listeningPort(child, signal);
    await setTimeout(ROUTES_LOADED_MS);
    try {
      const { warmUp } = await import("./code-cache-warm-up.mjs");
      await warmUp(`http://127.0.0.1:${port}`, scratch, signal);
    } catch (error) {
      console.warn(`envd: the code cache holds start-up only (the warm-up failed: ${error.message})`);
    }
    child.kill("SIGUSR2");
    const status = await Promise.race([exited, setTimeout(CACHE_TIMEOUT_MS, "timed out", { ref: false })]);
    if (status !== 0 || !existsSync(cache)) throw new Error(`envd exited with ${status} before writing it`);
  } catch (error) {
    child.kill("SIGKILL");
    rmSync(cache, { force: true });
    console.warn(`envd: no code cache (envd starts without it, slower): ${error.message}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The port envd's "listening" log line names. */
function listeningPort(child, signal) {
  return new Promise((resolve, reject) => {
    let text = "";
    const onAbort = () => reject(new Error("envd did not start listening"));
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("exit", () => reject(new Error(`envd exited before listening: ${text.slice(-500)}`)));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      text += chunk;
      const line = text.split("\n").find((l) => l.includes('"listening"'));
      if (line) {
        signal.removeEventListener("abort", onAbort);
        resolve(JSON.parse(line).port);
      }
    });
  });
}

buildNative();
await bundle();
await bundleEntry();
stageNativeModules();
await writeCodeCache();
