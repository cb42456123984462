// burrow template list [--json]
import { apiRequest } from "../../api.js";
import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printRows } from "../../output.js";

interface ListedTemplate {
  templateID: string;
  buildID: string;
  aliases: string[];
  tags: string[];
  cpuCount: number;
  memoryMB: number;
  createdAt: string;
}

export const templateList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List templates",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const templates = (await apiRequest(clientConnection(env), "GET", "/templates")).body as ListedTemplate[];
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
      values.json ?? false,
    );
  },
});
