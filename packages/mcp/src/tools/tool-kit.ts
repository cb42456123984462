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

/**
 * The official TypeScript client hands a notification to its handler one microtask after reading it but settles a
 * response at once, so a progress notification read in the same chunk as the tool's result finds its handler already
 * gone and is dropped. A result sent this long after the last progress leaves the two in separate reads.
 */
const PROGRESS_SETTLE_MS = 25;

interface ProgressSender {
  send(message: string): Promise<void>;
  /** Resolves once the last progress sent is PROGRESS_SETTLE_MS old (at once when none was sent). */
  settled(signal: AbortSignal): Promise<void>;
}

function progressSender(extra: Extra): ProgressSender {
  const token = extra._meta?.progressToken;
  let count = 0;
  let lastSentMs = 0;
  return {
    async send(message: string) {
      if (token === undefined) return;
      count += 1;
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: count, message } });
      lastSentMs = Date.now();
    },
    async settled(signal: AbortSignal) {
      const wait = lastSentMs + PROGRESS_SETTLE_MS - Date.now();
      if (count === 0 || wait <= 0 || signal.aborted) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        signal.addEventListener("abort", done, { once: true });
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
      });
    },
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
    const progress = progressSender(extra);
    try {
      return toResult(await handler(args, { session, signal: extra.signal, progress: (message) => progress.send(message) }));
    } catch (error) {
      return { isError: true, content: [{ type: "text", text: describeToolError(error) }] };
    } finally {
      await progress.settled(extra.signal);
    }
  };
  // The SDK's generic callback type cannot follow Shape through; the schema and the handler agree by construction.
  server.registerTool(name, { description: config.description, inputSchema: config.input, annotations }, callback as never);
}
