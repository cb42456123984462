// Jupyter kernelspecs installed in the sandbox (Debian puts python3's in /usr/share/jupyter/kernels; IRkernel
// adds `ir`). A context's language picks the spec: python → python3, otherwise the spec whose language matches.
import { readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface KernelSpec {
  name: string;
  argv: string[];
  language: string;
  env: Record<string, string>;
}

export function kernelSpecDirs(): string[] {
  const dirs = [join(homedir(), ".local/share/jupyter/kernels"), "/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels"];
  const extra = process.env.JUPYTER_PATH?.split(":").filter(Boolean).map((d) => join(d, "kernels")) ?? [];
  return [...extra, ...dirs];
}

export function findKernelSpecs(dirs: string[] = kernelSpecDirs()): KernelSpec[] {
  const specs = new Map<string, KernelSpec>();
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (specs.has(name)) continue;
      try {
        const raw = JSON.parse(readFileSync(join(dir, name, "kernel.json"), "utf8")) as Record<string, unknown>;
        if (!Array.isArray(raw.argv) || !raw.argv.every((a) => typeof a === "string")) continue;
        specs.set(name, {
          name,
          argv: raw.argv as string[],
          language: typeof raw.language === "string" ? raw.language.toLowerCase() : name,
          env: typeof raw.env === "object" && raw.env !== null ? (raw.env as Record<string, string>) : {},
        });
      } catch {
        // not a readable kernelspec
      }
    }
  }
  return [...specs.values()];
}

export function kernelSpecFor(language: string, specs: KernelSpec[] = findKernelSpecs()): KernelSpec | undefined {
  if (language === "python") return specs.find((s) => s.name === "python3") ?? specs.find((s) => s.language === "python");
  return specs.find((s) => s.language === language) ?? specs.find((s) => s.name === language);
}
