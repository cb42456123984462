#!/usr/bin/env node
// Builds the dashboard's browser bundle into dist/ui: type-checks ui/ (tsc, no output), bundles it with esbuild
// (Preact, xterm.js and the Connect client included; nothing is loaded from elsewhere at run time) into
// content-hashed files under dist/ui/assets, and writes index.html pointing at them.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const out = join(here, "dist", "ui");

const check = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(here, "ui", "tsconfig.json")], { stdio: "inherit" });
if (check.status !== 0) process.exit(check.status ?? 1);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await build({
  entryPoints: [join(here, "ui", "main.tsx")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  sourcemap: true,
  outdir: join(out, "assets"),
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  metafile: true,
  logLevel: "warning",
});
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith(".js"));
const css = outputs.find((f) => f.endsWith(".css"));
if (!js || !css) throw new Error(`dashboard build: expected a .js and a .css bundle, got ${outputs.join(", ")}`);
writeFileSync(join(out, "index.html"), readFileSync(join(here, "ui", "index.html"), "utf8").replace("%JS%", js).replace("%CSS%", css));
