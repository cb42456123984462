// Checkpoint trees from the command line: `burrow sandbox checkpoint|tree|rollback|branch` over /burrow/v1 (plain
// REST, like pause and kill). Checkpoints keep files only: processes restart on rollback and in branches.
import { Code, type CheckpointTreeWire, type CheckpointWire } from "@burrow/protocol";
import { apiRequest } from "../../api.js";
import { CliError } from "../../cli-error.js";
import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { parseInteger } from "../../numbers.js";
import { printJson, printRows } from "../../output.js";

const enc = encodeURIComponent;

export const sandboxCheckpoint = defineCommand({
  name: "checkpoint",
  summary: "Checkpoint a sandbox's files (copy-on-write; processes and memory are not kept)",
  args: "ID",
  minArgs: 1,
  options: {
    label: { type: "string", value: "TEXT", description: "A label kept with the checkpoint" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const [sandboxId] = positionals as [string];
    const res = await apiRequest(clientConnection(env), "POST", `/burrow/v1/sandboxes/${enc(sandboxId)}/checkpoints`, {
      body: values.label === undefined ? {} : { label: values.label },
      expect: [404],
    });
    if (res.status === 404) throw new CliError(Code.NotFound, `sandbox ${sandboxId} not found`);
    const checkpoint = res.body as CheckpointWire;
    if (values.json) printJson(checkpoint);
    else process.stdout.write(`${checkpoint.checkpointID}\n`);
  },
});

export const sandboxTree = defineCommand({
  name: "tree",
  summary: "Show a sandbox's checkpoint tree (* marks the checkpoint its current files descend from)",
  args: "ID",
  minArgs: 1,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const [sandboxId] = positionals as [string];
    const res = await apiRequest(clientConnection(env), "GET", `/burrow/v1/sandboxes/${enc(sandboxId)}/checkpoints`, { expect: [404] });
    if (res.status === 404) throw new CliError(Code.NotFound, `sandbox ${sandboxId} not found`);
    const tree = res.body as CheckpointTreeWire;
    if (values.json) {
      printJson(tree);
      return;
    }
    if (tree.checkpoints.length === 0) {
      process.stdout.write("(no checkpoints)\n");
      return;
    }
    // Parents come before their children: indent each under its parent.
    const depth = new Map<string, number>();
    for (const c of tree.checkpoints) {
      const d = c.parentID === null ? 0 : (depth.get(c.parentID) ?? -1) + 1;
      depth.set(c.checkpointID, d);
      const mark = c.checkpointID === tree.currentID ? "*" : " ";
      const owner = c.sandboxID === tree.sandboxID ? "" : `  (sandbox ${c.sandboxID})`;
      const label = c.label !== undefined ? `  ${JSON.stringify(c.label)}` : "";
      process.stdout.write(`${mark} ${"  ".repeat(d)}${c.checkpointID}  ${c.createdAt}  ${formatBytes(c.sizeBytes)}${label}${owner}\n`);
    }
  },
});

export const sandboxRollback = defineCommand({
  name: "rollback",
  summary: "Restore a sandbox in place to a checkpoint (same id and token; its processes restart)",
  args: "ID CHECKPOINT",
  minArgs: 2,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const [sandboxId, checkpointId] = positionals as [string, string];
    await apiRequest(clientConnection(env), "POST", `/burrow/v1/sandboxes/${enc(sandboxId)}/rollback`, { body: { checkpointID: checkpointId } });
    if (values.json) printJson({ sandboxId, checkpointId });
    else process.stdout.write(`${sandboxId}\trolled back to ${checkpointId}\n`);
  },
});

export const sandboxBranch = defineCommand({
  name: "branch",
  summary: "Start sandboxes from a checkpoint's files (exit code 1 if one did not start)",
  args: "CHECKPOINT",
  minArgs: 1,
  options: {
    count: { type: "string", value: "N", description: "How many sandboxes (default 1)" },
    timeout: { type: "string", value: "SECONDS", description: "Lifetime of each (server default when absent)" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const [checkpointId] = positionals as [string];
    const count = values.count === undefined ? 1 : parseInteger("--count", values.count, { min: 1 });
    const timeout = values.timeout === undefined ? undefined : parseInteger("--timeout", values.timeout, { min: 0 });
    const res = await apiRequest(clientConnection(env), "POST", `/burrow/v1/checkpoints/${enc(checkpointId)}/branch`, {
      body: { count, ...(timeout !== undefined ? { timeout } : {}) },
      expect: [404],
    });
    if (res.status === 404) throw new CliError(Code.NotFound, `checkpoint ${checkpointId} not found`);
    const outcomes = res.body as { sandbox?: { sandboxID: string }; error?: { code: number; message: string } }[];
    const rows = outcomes.map((o) => ({ sandbox: o.sandbox?.sandboxID ?? "", error: o.error ? `${o.error.code}: ${o.error.message}` : "" }));
    printRows(rows, ["sandbox", "error"], values.json === true);
    if (outcomes.some((o) => o.error)) process.exitCode = 1;
  },
});

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 100 ? Math.round(value) : Math.round(value * 10) / 10} ${units[unit]}`;
}
