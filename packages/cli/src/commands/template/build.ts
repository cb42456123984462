// burrow template build -f Dockerfile --name x [--context dir] | burrow template build file.ts --name x
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { TemplateClass } from "e2b";
import { BurrowError, Code } from "@burrow/protocol";
import { CliError } from "../../cli-error.js";
import { defineCommand, usageError } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { optionalInteger } from "../../numbers.js";

export const templateBuild = defineCommand({
  name: "build",
  summary: "Build a template from a Dockerfile or an e2b Template file",
  args: "[FILE]",
  minArgs: 0,
  maxArgs: 1,
  notes: [
    "Give a Dockerfile with -f, or a module exporting an e2b Template (.mjs/.js, or .ts/.mts compiled with esbuild):",
    "  burrow template build -f Dockerfile --name my-app",
    "  burrow template build template.ts --name my-app",
    "A template's ready check may take 120 s by default; set ENV BURROW_READY_TIMEOUT_MS in the template to change it.",
  ].join("\n"),
  options: {
    file: { type: "string", short: "f", value: "DOCKERFILE", description: "Build from this Dockerfile" },
    name: { type: "string", short: "n", value: "NAME", description: "Template name, optionally NAME:TAG (required)" },
    context: { type: "string", short: "c", value: "DIR", description: "Directory COPY sources are relative to (default: the file's)" },
    tag: { type: "string", short: "t", multiple: true, value: "TAG", description: "Also tag the build (repeatable)" },
    cpu: { type: "string", value: "N", description: "vCPUs of sandboxes from this template" },
    memory: { type: "string", value: "MB", description: "Memory of sandboxes from this template" },
    "ready-cmd": { type: "string", value: "CMD", description: "Command that succeeds once the start command is ready" },
    "skip-cache": { type: "boolean", description: "Run every step again" },
  },
  async run({ values, positionals, env }) {
    if (!values.name) throw usageError("--name is required (see 'burrow template build --help')");
    const cpuCount = optionalInteger("--cpu", values.cpu, { min: 1 });
    const memoryMB = optionalInteger("--memory", values.memory, { min: 1 });
    const source = values.file ?? positionals[0];
    if (!source) throw usageError("give a Dockerfile with -f, or a template file (.ts/.mts/.mjs/.js exporting an e2b Template)");
    const path = resolve(source);
    const contextDir = resolve(values.context ?? dirname(path));
    const connection = clientConnection(env);
    const { Template } = await import("e2b");
    let template: TemplateClass;
    if (!values.file && /\.(?:[cm]?[jt]s|tsx)$/.test(path)) {
      const { loadTemplateFile } = await import("./load-template-file.js");
      template = await loadTemplateFile(path);
    } else {
      const text = await readFile(path, "utf8").catch(() => {
        throw new CliError(Code.NotFound, `cannot read ${path}`);
      });
      const { dockerfileTemplate } = await import("./dockerfile-template.js");
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
      ...(cpuCount !== undefined ? { cpuCount } : {}),
      ...(memoryMB !== undefined ? { memoryMB } : {}),
      skipCache: values["skip-cache"] ?? false,
      onBuildLogs: (entry) => {
        const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
        const isStep = stepPattern.test(entry.message);
        const line = isStep ? `\x1b[1m${entry.message}\x1b[0m` : `  ${entry.message}`;
        const out = entry.level === "error" ? process.stderr : process.stdout;
        out.write(`${seconds}s ${process.stdout.isTTY ? line : line.replace(/\x1b\[[0-9;]*m/g, "")}\n`);
      },
    }).catch((error: unknown) => {
      throw new CliError(BurrowError.from(error).code, `build failed: ${(error as Error).message}`, { cause: error });
    });
    process.stdout.write(`\nbuilt ${info.name} (template ${info.templateId}, build ${info.buildId}, tags ${info.tags.join(", ")})\n`);
  },
});
