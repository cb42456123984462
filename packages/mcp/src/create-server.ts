// Burrow as MCP tools: one McpServer per client connection (stdio) or per request (streamable HTTP), its tools
// working through the session's connection to a Burrow server.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { registerResources } from "./resources.js";
import type { BurrowSession } from "./session.js";
import { registerBusTools } from "./tools/bus-tools.js";
import { registerCodeTools } from "./tools/code-tools.js";
import { registerCommandTools } from "./tools/command-tools.js";
import { registerFileTools } from "./tools/file-tools.js";
import { registerSandboxTools } from "./tools/sandbox-tools.js";

export const SERVER_INFO = { name: "burrow", version: "0.1.0" } as const;

const INSTRUCTIONS =
  "Burrow runs isolated Linux sandboxes. Create one with create_sandbox (template 'base', or 'code-interpreter-v1' for run_code), " +
  "then use run_command, run_code, read_file, write_file, list_files and watch_files with its sandboxId. snapshot_sandbox checkpoints " +
  "a sandbox and restore_snapshot rolls back to a checkpoint; fork_sandbox copies a sandbox. Kill sandboxes you no longer need. " +
  "bus_publish, bus_read and the queue tools let agents talk to each other.";

export function createBurrowMcpServer(session: BurrowSession): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS });
  registerSandboxTools(server, session);
  registerCommandTools(server, session);
  registerCodeTools(server, session);
  registerFileTools(server, session);
  registerBusTools(server, session);
  registerResources(server, session);
  return server;
}
