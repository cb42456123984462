import { apiRequest } from "../../api.js";
import { defineCommand, usageError } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { metadataQuery, parseKeyValues } from "../../key-values.js";
import { printRows } from "../../output.js";

/** GET /v2/sandboxes item (E2B's ListedSandbox), the fields shown. */
interface ListedSandbox {
  sandboxID: string;
  templateID: string;
  state: string;
  startedAt: string;
  endAt: string;
  cpuCount: number;
  memoryMB: number;
  metadata?: Record<string, string>;
}

const STATES = ["running", "paused"];

export const sandboxList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List sandboxes, newest first",
  options: {
    state: { type: "string", value: "STATES", description: "Only these states: running, paused, or running,paused (default: both)" },
    metadata: { type: "string", multiple: true, value: "K=V", description: "Only sandboxes with this metadata (repeatable)" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, env }) {
    const query = new URLSearchParams();
    const metadata = metadataQuery(parseKeyValues(values.metadata, "metadata"));
    if (metadata) query.set("metadata", metadata);
    for (const state of values.state?.split(",") ?? []) query.append("state", state.trim());
    for (const state of query.getAll("state")) {
      if (!STATES.includes(state)) throw usageError(`--state takes running, paused or running,paused, got '${state}'`);
    }
    const connection = clientConnection(env);
    const items: ListedSandbox[] = [];
    for (;;) {
      const res = await apiRequest(connection, "GET", "/v2/sandboxes", { query });
      items.push(...(res.body as ListedSandbox[]));
      const next = res.headers["x-next-token"];
      if (typeof next !== "string" || next === "") break;
      query.set("nextToken", next);
    }
    printRows(
      items.map((info) => ({
        sandboxId: info.sandboxID,
        templateId: info.templateID,
        state: info.state,
        startedAt: info.startedAt,
        endAt: info.endAt,
        cpuCount: info.cpuCount,
        memoryMB: info.memoryMB,
        metadata: info.metadata ?? {},
      })),
      ["sandboxId", "templateId", "state", "startedAt", "endAt", "metadata"],
      values.json ?? false,
    );
  },
});
