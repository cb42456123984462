// burrow node list | cordon NAME | uncordon NAME | drain NAME: the nodes of the cluster the server is a node of
// (instance admin key). A cordoned node takes no new sandboxes; its sandboxes keep running. A drain cordons the node,
// optionally pauses its sandboxes to disk, and waits until none runs there (sandboxes cannot move between nodes yet).
import type { NodeListWire, NodeView } from "@burrow/protocol";
import { apiRequest } from "../../api.js";
import { defineCommand, usageError, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson, printRows } from "../../output.js";

const nodeList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List the cluster's nodes: up or down, cordoned, load",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const { self, nodes } = (await apiRequest(clientConnection(env), "GET", "/burrow/v1/nodes")).body as NodeListWire;
    if (values.json) return printJson({ self, nodes });
    printRows(
      nodes.map((n) => ({
        name: n.name === self ? `${n.name} (this)` : n.name,
        status: n.status,
        cordoned: n.cordoned ? "yes" : "no",
        sandboxes: n.load.runningSandboxes,
        freeMemMB: Math.round(n.load.freeMemoryBytes / 1_048_576),
        pools: n.load.poolFill.map((p) => `${p.template} ${p.ready}/${p.target}`).join(", "),
        version: n.version,
        url: n.apiUrl,
        lastSeen: n.lastSeenAt,
      })),
      ["name", "status", "cordoned", "sandboxes", "freeMemMB", "pools", "version", "url", "lastSeen"],
      false,
    );
  },
});

function cordonCommand(verb: "cordon" | "uncordon") {
  return defineCommand({
    name: verb,
    summary: verb === "cordon" ? "Cordon a node: it takes no new sandboxes" : "Uncordon a node",
    args: "NAME",
    minArgs: 1,
    maxArgs: 1,
    options: { json: { type: "boolean", description: "Print JSON" } },
    async run({ values, positionals, env }) {
      const name = positionals[0]!;
      const node = (await apiRequest(clientConnection(env), "POST", `/burrow/v1/nodes/${encodeURIComponent(name)}/${verb}`)).body as NodeView;
      if (values.json) return printJson(node);
      process.stdout.write(`node ${node.name} ${node.cordoned ? "cordoned" : "uncordoned"}\n`);
    },
  });
}

interface DrainReport {
  node: string;
  paused: string[];
  /** With --move (servers of this version on): sandboxes now on another node. */
  moved?: Array<{ sandboxId: string; node: string }>;
  failed: Array<{ sandboxId: string; error: string }>;
  running: string[];
  drained: boolean;
  waitedMs: number;
}

const nodeDrain = defineCommand({
  name: "drain",
  summary: "Cordon a node, optionally pause its sandboxes to disk or move them to other nodes, and wait until none runs there",
  args: "NAME",
  minArgs: 1,
  maxArgs: 1,
  options: {
    timeout: { type: "string", value: "S", description: "Seconds to wait for no sandbox running (default 300)" },
    pause: { type: "boolean", description: "Pause its running sandboxes to the filesystem (resumable later, on that node)" },
    move: { type: "boolean", description: "Move its running sandboxes to other nodes: paused to the filesystem, resumed there (same ids)" },
    json: { type: "boolean", description: "Print JSON" },
  },
  notes:
    "With --pause, paused sandboxes resume on that node (or, once it is down or cordoned, on whichever node a connect reaches). " +
    "With --move, each running sandbox is paused to the filesystem and resumed on the best other node: processes restart, files, id and envd token stay.",
  async run({ values, positionals, env }) {
    const name = positionals[0]!;
    const timeout = values.timeout === undefined ? 300 : Number(values.timeout);
    if (!Number.isInteger(timeout) || timeout < 0) throw usageError(`--timeout must be a whole number of seconds, got '${values.timeout}'`);
    const body = { timeout, ...(values.pause ? { pause: true } : {}), ...(values.move ? { move: true } : {}) };
    const report = (
      await apiRequest(clientConnection(env), "POST", `/burrow/v1/nodes/${encodeURIComponent(name)}/drain`, { body, timeoutMs: (timeout + 60) * 1000 })
    ).body as DrainReport;
    // A move that failed leaves its sandbox paused here (not running): the drain did not do what was asked.
    if (!report.drained || (values.move && report.failed.length > 0)) process.exitCode = 1;
    if (values.json) return printJson(report);
    const moved = report.moved ?? [];
    const paused = (report.paused.length > 0 ? `, ${report.paused.length} paused to disk` : "") + (moved.length > 0 ? `, ${moved.length} moved` : "");
    if (report.drained) process.stdout.write(`node ${report.node} cordoned and drained${paused}: no sandbox running\n`);
    else process.stdout.write(`node ${report.node} cordoned${paused}; still running after ${Math.round(report.waitedMs / 1000)} s: ${report.running.join(" ")}\n`);
    for (const m of moved) process.stdout.write(`moved ${m.sandboxId} to ${m.node}\n`);
    for (const f of report.failed) process.stderr.write(`could not ${values.move ? "move" : "pause"} ${f.sandboxId}: ${f.error}\n`);
  },
});

export const nodeCommands: CommandGroup = {
  name: "node",
  summary: "List, cordon, uncordon and drain the cluster's nodes",
  commands: [nodeList, cordonCommand("cordon"), cordonCommand("uncordon"), nodeDrain],
};
