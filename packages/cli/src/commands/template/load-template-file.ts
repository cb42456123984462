// `burrow template build app.template.ts`: a module exporting an SDK Template (default export, `template`, or a
// function returning one). Node 20 cannot import TypeScript, so .ts/.mts/.cts/.tsx files are bundled with esbuild
// (installed with Burrow) into a temporary .mjs next to the source: relative imports resolve, and the SDK's
// `Template()` still takes the file's directory as its file context. A JavaScript file is imported as it is, unless
// `e2b` cannot be resolved from its directory (a template file outside any npm project): then it is bundled the
// same way with `e2b` pointing at the copy the CLI itself uses.
import { rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";
import type { TemplateClass } from "e2b";
import { Code } from "@burrow/protocol";
import { CliError } from "../../cli-error.js";

const TYPESCRIPT = /\.(?:ts|mts|cts|tsx)$/;

export async function loadTemplateFile(file: string): Promise<TemplateClass> {
  let url = pathToFileURL(file).href;
  let cleanup: string | undefined;
  if (TYPESCRIPT.test(file) || !resolvableFrom(dirname(file), "e2b")) {
    cleanup = join(dirname(file), `.burrow-template-${process.pid}-${basename(file).replace(/\.[^.]+$/, "")}.mjs`);
    await bundle(file, cleanup);
    url = pathToFileURL(cleanup).href;
  }
  try {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(url)) as Record<string, unknown>;
    } catch (error) {
      throw new CliError(Code.InvalidArgument, `cannot load ${file}: ${(error as Error).message}`, { cause: error });
    }
    let value = mod.default ?? mod.template;
    if (typeof value === "function" && !isTemplate(value)) value = await (value as () => unknown)();
    if (!isTemplate(value)) throw new CliError(Code.InvalidArgument, `${file} must export an e2b Template (default export or 'template')`);
    return value as TemplateClass;
  } finally {
    if (cleanup) await rm(cleanup, { force: true });
  }
}

async function bundle(file: string, outfile: string): Promise<void> {
  let esbuild: typeof import("esbuild");
  try {
    esbuild = await import("esbuild");
  } catch {
    throw new CliError(
      Code.FailedPrecondition,
      TYPESCRIPT.test(file)
        ? `${file}: loading a TypeScript template file needs esbuild, which is not installed; pass a .mjs file instead`
        : `${file} imports 'e2b', which is not installed next to it; run 'npm install e2b' there`,
    );
  }
  // The CLI's own e2b, for files whose directory has none.
  const cliE2b = import.meta.resolve("e2b");
  const e2bFallback: Plugin = {
    name: "burrow-e2b-fallback",
    setup(build) {
      build.onResolve({ filter: /^e2b$/ }, (args) =>
        resolvableFrom(args.resolveDir, "e2b") ? { path: "e2b", external: true } : { path: cliE2b, external: true },
      );
    },
  };
  try {
    await esbuild.build({
      entryPoints: [file],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      plugins: [e2bFallback],
      outfile,
      logLevel: "silent",
    });
  } catch (error) {
    const errors = (error as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors;
    const detail = errors?.length
      ? errors.map((e) => (e.location ? `${e.location.file}:${e.location.line}: ${e.text}` : e.text)).join("\n")
      : (error as Error).message;
    throw new CliError(Code.InvalidArgument, `cannot compile ${file}:\n${detail}`, { cause: error });
  }
}

function resolvableFrom(dir: string, specifier: string): boolean {
  try {
    createRequire(join(dir, "noop.js")).resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

function isTemplate(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { setStartCmd?: unknown }).setStartCmd === "function";
}
