// Code in a code-interpreter sandbox (template code-interpreter-v1): Python (Jupyter), JavaScript, TypeScript or
// bash cells with state kept between calls, through the official @e2b/code-interpreter client. Charts and images
// come back as MCP image content, text results and logs as text.
import type { Result } from "@e2b/code-interpreter";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { BurrowSession } from "../session.js";
import { ToolError, toToolError } from "../tool-error.js";
import { tail } from "./command-tools.js";
import { sandboxId } from "./sandbox-tools.js";
import { defineTool } from "./tool-kit.js";

function resultSummary(r: Result): Record<string, unknown> {
  return {
    ...(r.text !== undefined ? { text: tail(r.text) } : {}),
    ...(r.json !== undefined ? { json: r.json } : {}),
    ...(r.markdown !== undefined ? { markdown: tail(r.markdown) } : {}),
    ...(r.html !== undefined ? { html: tail(r.html) } : {}),
    formats: r.formats(),
    isMainResult: r.isMainResult,
  };
}

export function registerCodeTools(server: McpServer, session: BurrowSession): void {
  defineTool(
    server,
    session,
    "run_code",
    {
      title: "Run code",
      description:
        "Run a code cell in a code-interpreter sandbox (create it with template 'code-interpreter-v1'). Variables and imports persist " +
        "between calls per language. Returns stdout, stderr, results (charts as images) and the error with its traceback, if any.",
      input: {
        sandboxId,
        code: z.string().min(1).max(1_000_000),
        language: z.enum(["python", "javascript", "typescript", "bash"]).default("python"),
        timeoutSeconds: z.number().int().min(1).max(3600).default(300),
      },
    },
    async (args, { session, signal, progress }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      session.logs.append(args.sandboxId, `>>> run_code (${args.language})\n${tail(args.code, 2048)}`);
      const execution = await sandbox
        .runCode(args.code, {
          language: args.language,
          timeoutMs: args.timeoutSeconds * 1000,
          onStdout: (m) => progress(m.line),
          onStderr: (m) => progress(`stderr: ${m.line}`),
        })
        .catch((error: unknown) => {
          const e = toToolError(error);
          // Nothing answers on the execution server's port in sandboxes of other templates.
          if (e.code !== "unavailable" && e.code !== "not_found" && !/\b50[23]\b/.test(e.message)) throw e;
          throw new ToolError(e.code, `${e.message} (run_code needs a sandbox created from the 'code-interpreter-v1' template)`, { cause: error });
        });
      const stdout = execution.logs.stdout.join("");
      const stderr = execution.logs.stderr.join("");
      const error = execution.error ? { name: execution.error.name, value: execution.error.value, traceback: tail(execution.error.traceback) } : undefined;
      session.logs.append(args.sandboxId, `${tail(stdout + stderr, 4096)}${error ? `\n${error.name}: ${error.value}` : ""}`);
      const structured = { stdout: tail(stdout), stderr: tail(stderr), results: execution.results.map(resultSummary), ...(error ? { error } : {}) };
      const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(structured, null, 2) }];
      for (const r of execution.results) {
        if (r.png) content.push({ type: "image", data: r.png, mimeType: "image/png" });
        else if (r.jpeg) content.push({ type: "image", data: r.jpeg, mimeType: "image/jpeg" });
      }
      return { content, structured };
    },
  );
}
