// burrow template build -f Dockerfile --name x [--context dir] | burrow template build file.ts --name x
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Template, type TemplateClass } from "e2b";
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";
import { dockerfileTemplate } from "./dockerfile-template.js";
import { loadTemplateFile } from "./load-template-file.js";

export async function templateBuild(argv: string[], connection: Connection): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: "string", short: "f" },
      name: { type: "string", short: "n" },
      context: { type: "string", short: "c" },
      tag: { type: "string", short: "t", multiple: true },
      cpu: { type: "string" },
      memory: { type: "string" },
      "ready-cmd": { type: "string" },
      "skip-cache": { type: "boolean", default: false },
    },
  });
  if (!values.name) throw new CliError("--name is required", 2);
  const source = values.file ?? positionals[0];
  if (!source) throw new CliError("give a Dockerfile with -f, or a template file (.ts/.mts/.mjs/.js exporting an e2b Template)", 2);
  const path = resolve(source);
  const contextDir = resolve(values.context ?? dirname(path));
  let template: TemplateClass;
  if (!values.file && /\.(?:[cm]?[jt]s|tsx)$/.test(path)) {
    template = await loadTemplateFile(path);
  } else {
    const text = await readFile(path, "utf8").catch(() => {
      throw new CliError(`cannot read ${path}`);
    });
    template = await dockerfileTemplate(text, {
      contextDir,
      isTemplate: (name) => Template.exists(name, connection),
      readyCmd: values["ready-cmd"],
    });
  }
  const started = Date.now();
  const stepPattern = /^(?:CACHED )?\[(\d+)\/(\d+)\]/;
  const info = await Template.build(template, values.name, {
    ...connection,
    ...(values.tag ? { tags: values.tag } : {}),
    ...(values.cpu ? { cpuCount: Number(values.cpu) } : {}),
    ...(values.memory ? { memoryMB: Number(values.memory) } : {}),
    skipCache: values["skip-cache"],
    onBuildLogs: (entry) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
      const isStep = stepPattern.test(entry.message);
      const line = isStep ? `\x1b[1m${entry.message}\x1b[0m` : `  ${entry.message}`;
      const out = entry.level === "error" ? process.stderr : process.stdout;
      out.write(`${seconds}s ${process.stdout.isTTY ? line : line.replace(/\x1b\[[0-9;]*m/g, "")}\n`);
    },
  }).catch((error: unknown) => {
    throw new CliError(`build failed: ${(error as Error).message}`);
  });
  process.stdout.write(`\nbuilt ${info.name} (template ${info.templateId}, build ${info.buildId}, tags ${info.tags.join(", ")})\n`);
}
