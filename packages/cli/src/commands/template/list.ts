// burrow template list [--json]
import { parseArgs } from "node:util";
import type { Connection } from "../../connection.js";
import { printRows } from "../../output.js";
import { templateRequest } from "./rest.js";

interface ListedTemplate {
  templateID: string;
  buildID: string;
  aliases: string[];
  tags: string[];
  cpuCount: number;
  memoryMB: number;
  createdAt: string;
}

export async function templateList(argv: string[], connection: Connection): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { json: { type: "boolean", default: false } } });
  const templates = (await templateRequest(connection, "GET", "/templates")) as ListedTemplate[];
  printRows(
    templates.map((t) => ({
      templateId: t.templateID,
      names: t.aliases.join(","),
      tags: t.tags.join(","),
      buildId: t.buildID,
      cpuCount: t.cpuCount,
      memoryMB: t.memoryMB,
      createdAt: t.createdAt,
    })),
    ["templateId", "names", "tags", "cpuCount", "memoryMB", "createdAt"],
    values.json,
  );
}
