// The names the gateway lists tools under. Like E2B's gateway, a tool keeps its own name; only when two servers
// offer the same name are those tools listed as `<server>__<tool>` (the form Docker's MCP gateway, on which E2B's
// is built, uses for prefixed names), so that every name routes to exactly one server.
import type { Tool } from "@modelcontextprotocol/sdk/types.js";

export interface RoutedTool {
  server: string;
  /** The tool's name on its server. */
  name: string;
  /** What the gateway lists it as. */
  tool: Tool;
}

export function routeTools(servers: ReadonlyArray<{ name: string; tools: readonly Tool[] }>): Map<string, RoutedTool> {
  const owners = new Map<string, number>();
  for (const s of servers) for (const t of new Set(s.tools.map((t) => t.name))) owners.set(t, (owners.get(t) ?? 0) + 1);
  const routes = new Map<string, RoutedTool>();
  for (const s of servers) {
    for (const tool of s.tools) {
      const exposed = (owners.get(tool.name) ?? 0) > 1 ? `${s.name}__${tool.name}` : tool.name;
      if (routes.has(exposed)) continue;
      routes.set(exposed, { server: s.name, name: tool.name, tool: { ...tool, name: exposed } });
    }
  }
  return routes;
}
