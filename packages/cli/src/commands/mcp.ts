// `burrow mcp`: Burrow's MCP server over stdio, for MCP clients that start servers as processes (Claude Desktop,
// IDEs). It talks to a running Burrow server over its HTTP APIs, like the other client commands: E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY (or the key in the state directory). stdout carries only MCP messages.
import { defineCommand } from "../command.js";
import { clientConnection } from "../connection.js";

export const mcp = defineCommand({
  name: "mcp",
  summary: "Serve Burrow's tools (sandboxes, commands, code, files, snapshots, bus) over MCP on stdio",
  notes: [
    "Connects to the server at E2B_API_URL (default http://localhost:3000) with E2B_API_KEY, or the key that",
    "'burrow up' wrote to its state directory. A client config, e.g. for Claude Desktop:",
    '  {"mcpServers": {"burrow": {"command": "npx", "args": ["burrow", "mcp"], "env": {"E2B_API_KEY": "…"}}}}',
    "The server also serves the same tools over streamable HTTP at /mcp (API key as X-API-Key or Bearer).",
  ].join("\n"),
  options: {},
  async run({ env }) {
    const connection = clientConnection(env);
    const { serveStdio } = await import("@burrow/mcp");
    const stop = new AbortController();
    process.once("SIGINT", () => stop.abort());
    process.once("SIGTERM", () => stop.abort());
    await serveStdio(connection, { signal: stop.signal });
  },
});
