// How every tool is declared: zod-validated arguments (the SDK answers bad ones with a tool error), a handler that
// returns data or throws, and one place where results become MCP content and failures become tool errors.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import type { BurrowSession } from "../session.js";
import { describeToolError } from "../tool-error.js";

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface ToolContext {
  session: BurrowSession;
  signal: AbortSignal;
  /** Sends a progress notification when the client asked for them (a progressToken); otherwise nothing. */
  progress(message: string): Promise<void>;
}

/** A handler's answer: data (shown as JSON and as structured content) or content of its own. */
export type ToolOutput = { content: CallToolResult["content"]; structured?: Record<string, unknown>; isError?: boolean } | Record<string, unknown>;

function isContent(output: ToolOutput): output is { content: CallToolResult["content"]; structured?: Record<string, unknown>; isError?: boolean } {
  return Array.isArray((output as { content?: unknown }).content);
}

export function toResult(output: ToolOutput): CallToolResult {
  if (isContent(output)) {
    return { content: output.content, ...(output.structured ? { structuredContent: output.structured } : {}), ...(output.isError ? { isError: true } : {}) };
  }
  return { content: [{ type: "text", text: JSON.stringify(output, null, 2) }], structuredContent: output };
}

export function progressSender(extra: Extra): (message: string) => Promise<void> {
  const token = extra._meta?.progressToken;
  let count = 0;
  return async (message: string) => {
    if (token === undefined) return;
    count += 1;
    await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: count, message } });
  };
}

export function defineTool<Shape extends z.ZodRawShape>(
  server: McpServer,
  session: BurrowSession,
  name: string,
  config: { title?: string; description: string; input: Shape; readOnly?: boolean; destructive?: boolean },
  handler: (args: z.infer<z.ZodObject<Shape>>, ctx: ToolContext) => Promise<ToolOutput>,
): void {
  const annotations = {
    ...(config.title ? { title: config.title } : {}),
    readOnlyHint: config.readOnly ?? false,
    destructiveHint: config.destructive ?? false,
    openWorldHint: false,
  };
  const callback = async (args: z.infer<z.ZodObject<Shape>>, extra: Extra): Promise<CallToolResult> => {
    try {
      return toResult(await handler(args, { session, signal: extra.signal, progress: progressSender(extra) }));
    } catch (error) {
      return { isError: true, content: [{ type: "text", text: describeToolError(error) }] };
    }
  };
  // The SDK's generic callback type cannot follow Shape through; the schema and the handler agree by construction.
  server.registerTool(name, { description: config.description, inputSchema: config.input, annotations }, callback as never);
}
