// `burrow template build app.template.ts`: a module exporting an SDK Template (default export, `template`, or a
// function returning one). TypeScript is bundled with esbuild next to the source so relative imports resolve.
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { TemplateClass } from "e2b";
import { CliError } from "../../cli-error.js";

export async function loadTemplateFile(file: string): Promise<TemplateClass> {
  let url = pathToFileURL(file).href;
  let cleanup: string | undefined;
  if (/\.(?:ts|mts|cts|tsx)$/.test(file)) {
    let esbuild: typeof import("esbuild");
    try {
      esbuild = await import("esbuild");
    } catch {
      throw new CliError("building from a .ts template file needs esbuild installed; or pass a .mjs file");
    }
    cleanup = join(dirname(file), `.burrow-template-${process.pid}.mjs`);
    await esbuild.build({ entryPoints: [file], bundle: true, platform: "node", format: "esm", packages: "external", outfile: cleanup, logLevel: "error" });
    url = pathToFileURL(cleanup).href;
  }
  try {
    const mod = (await import(url)) as Record<string, unknown>;
    let value = mod.default ?? mod.template;
    if (typeof value === "function" && !isTemplate(value)) value = await (value as () => unknown)();
    if (!isTemplate(value)) throw new CliError(`${file} must export an e2b Template (default export or 'template')`);
    return value as TemplateClass;
  } finally {
    if (cleanup) await rm(cleanup, { force: true });
  }
}

function isTemplate(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { setStartCmd?: unknown }).setStartCmd === "function";
}
