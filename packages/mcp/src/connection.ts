// Where Burrow's MCP server sends its calls: the REST API (sandboxes, templates, the bus) and the sandbox URL that
// envd and port traffic go through. The server is a client of those HTTP APIs, whether it runs in the server's
// process (/mcp) or as `burrow mcp` beside a desktop client.
export interface BurrowConnection {
  /** The REST API, e.g. http://127.0.0.1:3000 (E2B_API_URL). */
  apiUrl: string;
  /** Where envd and sandbox ports are reached (E2B_SANDBOX_URL); @default apiUrl */
  sandboxUrl?: string | undefined;
  apiKey: string;
}

/** Options for the official SDK (ConnectionOpts). */
export function sdkOptions(c: BurrowConnection): { apiUrl: string; sandboxUrl: string; apiKey: string; debug: false } {
  return { apiUrl: c.apiUrl, sandboxUrl: c.sandboxUrl ?? c.apiUrl, apiKey: c.apiKey, debug: false };
}
