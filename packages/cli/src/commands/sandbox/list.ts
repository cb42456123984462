import { parseArgs } from "node:util";
import { Sandbox, type SandboxInfo } from "e2b";
import type { Connection } from "../../connection.js";
import { parseKeyValues } from "../../key-values.js";
import { printRows } from "../../output.js";

export async function sandboxList(argv: string[], connection: Connection): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      state: { type: "string" },
      metadata: { type: "string", multiple: true },
      json: { type: "boolean", default: false },
    },
  });
  const state = values.state?.split(",") as ("running" | "paused")[] | undefined;
  const paginator = Sandbox.list({
    ...connection,
    query: { metadata: parseKeyValues(values.metadata, "metadata"), ...(state ? { state } : {}) },
  });
  const items: SandboxInfo[] = [];
  while (paginator.hasNext) items.push(...(await paginator.nextItems()));
  printRows(
    items.map((info) => ({
      sandboxId: info.sandboxId,
      templateId: info.templateId,
      state: info.state,
      startedAt: info.startedAt,
      endAt: info.endAt,
      cpuCount: info.cpuCount,
      memoryMB: info.memoryMB,
      metadata: info.metadata,
    })),
    ["sandboxId", "templateId", "state", "startedAt", "endAt", "metadata"],
    values.json,
  );
}
