// Resources: a sandbox's files (burrow://sandboxes/{sandboxId}/files/{path}) and its logs — what this server ran
// there and the output (burrow://sandboxes/{sandboxId}/logs) — plus the list of sandboxes.
import { Sandbox } from "@e2b/code-interpreter";
import { type McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { BurrowSession } from "./session.js";
import { decodeContent, readSandboxFile } from "./tools/file-tools.js";
import { ToolError } from "./tool-error.js";

function single(value: string | string[] | undefined, name: string): string {
  const v = Array.isArray(value) ? value.join("/") : value;
  if (!v) throw new ToolError("invalid_argument", `resource URI has no ${name}`);
  return decodeURIComponent(v);
}

export function registerResources(server: McpServer, session: BurrowSession): void {
  server.registerResource(
    "sandboxes",
    "burrow://sandboxes",
    { title: "Sandboxes", description: "Running and paused sandboxes", mimeType: "application/json" },
    async (uri) => {
      const paginator = Sandbox.list(session.sdk);
      const items = [];
      while (paginator.hasNext && items.length < 200) items.push(...(await paginator.nextItems()));
      const list = items.map((s) => ({ sandboxId: s.sandboxId, templateId: s.templateId, state: s.state, metadata: s.metadata }));
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(list, null, 2) }] };
    },
  );

  server.registerResource(
    "sandbox-logs",
    new ResourceTemplate("burrow://sandboxes/{sandboxId}/logs", { list: undefined }),
    {
      title: "Sandbox logs",
      description: "Commands and code this server ran in the sandbox, with their output (background commands included)",
      mimeType: "text/plain",
    },
    async (uri, vars) => {
      const id = single(vars.sandboxId, "sandbox id");
      return { contents: [{ uri: uri.href, mimeType: "text/plain", text: session.logs.read(id) }] };
    },
  );

  server.registerResource(
    "sandbox-file",
    new ResourceTemplate("burrow://sandboxes/{sandboxId}/files/{+path}", { list: undefined }),
    { title: "Sandbox file", description: "A file in a sandbox, by absolute path (burrow://sandboxes/<id>/files/etc/hostname)" },
    async (uri, vars) => {
      const id = single(vars.sandboxId, "sandbox id");
      const path = `/${single(vars.path, "path").replace(/^\/+/, "")}`;
      const sandbox = await session.sandbox(id);
      const { encoding, content } = decodeContent(await readSandboxFile(sandbox, path, "user"));
      return {
        contents: [
          encoding === "utf8"
            ? { uri: uri.href, mimeType: "text/plain", text: content }
            : { uri: uri.href, mimeType: "application/octet-stream", blob: content },
        ],
      };
    },
  );
}
