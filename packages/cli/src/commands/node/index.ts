// burrow node list | cordon NAME | uncordon NAME: the nodes of the cluster the server is a node of (instance admin
// key). A cordoned node takes no new sandboxes once placement exists; its sandboxes keep running.
import { apiRequest } from "../../api.js";
import { defineCommand, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson, printRows } from "../../output.js";

interface NodeView {
  name: string;
  apiUrl: string;
  version: string;
  startedAt: string;
  cordoned: boolean;
  status: "up" | "down";
  lastSeenAt: string;
  load: { freeMemoryBytes: number; runningSandboxes: number; poolFill: Array<{ template: string; ready: number; target: number }> };
}

const nodeList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List the cluster's nodes: up or down, cordoned, load",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const { self, nodes } = (await apiRequest(clientConnection(env), "GET", "/burrow/v1/nodes")).body as { self: string; nodes: NodeView[] };
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

export const nodeCommands: CommandGroup = {
  name: "node",
  summary: "List, cordon and uncordon the cluster's nodes",
  commands: [nodeList, cordonCommand("cordon"), cordonCommand("uncordon")],
};
