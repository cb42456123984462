// Burrow's MCP server over stdio (`burrow mcp`), for desktop clients and IDEs that start MCP servers as processes.
// stdout carries only protocol messages.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { BurrowConnection } from "./connection.js";
import { createBurrowMcpServer } from "./create-server.js";
import { BurrowSession } from "./session.js";

/** Serves until stdin ends or the signal aborts. */
export async function serveStdio(connection: BurrowConnection, opts: { signal?: AbortSignal } = {}): Promise<void> {
  const server = createBurrowMcpServer(new BurrowSession(connection));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
    opts.signal?.addEventListener("abort", () => resolve(), { once: true });
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
