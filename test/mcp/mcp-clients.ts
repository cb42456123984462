// MCP clients of Burrow's own MCP server for the e2e suites: over stdio (`burrow mcp`, a real child process of the
// built CLI pointed at the test server) and over streamable HTTP (/mcp on the test server).
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { BurrowTestEnv } from "../helpers/burrow-env.js";

export type TransportKind = "stdio" | "http";

const CLI = join(import.meta.dirname, "..", "..", "packages", "cli", "bin", "burrow.js");

export async function connectBurrowMcp(env: BurrowTestEnv, kind: TransportKind, apiKey = env.apiKey): Promise<Client> {
  const client = new Client({ name: "burrow-e2e", version: "1.0.0" });
  if (kind === "stdio") {
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp"],
        // Only what `burrow mcp` needs: a stray E2B_* variable must not redirect it.
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, E2B_API_KEY: apiKey },
        stderr: "inherit",
      }),
    );
  } else {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${env.apiUrl}/mcp`), { requestInit: { headers: { "X-API-Key": apiKey } } }));
  }
  return client;
}

/** A tool call's result; a tool error fails the test with its message unless `allowError`. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  opts: { allowError?: boolean; timeout?: number; onprogress?: (message: string) => void } = {},
): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args }, undefined, {
    timeout: opts.timeout ?? 120_000,
    ...(opts.onprogress ? { onprogress: (p: { message?: string }) => opts.onprogress!(p.message ?? "") } : {}),
  })) as CallToolResult;
  if (result.isError && !opts.allowError) throw new Error(`${name} failed: ${textOf(result)}`);
  return result;
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : `<${c.type}>`)).join("\n");
}

/** The structured result of a tool that answers with data. */
export function data<T = Record<string, unknown>>(result: CallToolResult): T {
  return result.structuredContent as T;
}
