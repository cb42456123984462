// `burrow up` serves Burrow's MCP server at /mcp (the composition root wires it): an MCP client over streamable
// HTTP with the API key lists the tools and creates, uses and kills a sandbox on that server; `burrow mcp` on stdio
// reaches the same server with the key `burrow up` wrote to its state directory.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, describe, expect, test } from "vitest";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";
import { call, connectBurrowMcp, data } from "./mcp-clients.js";

describe("burrow up serves MCP", () => {
  const instance = newTestInstance("mcp-up");
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  test("/mcp on the server, and burrow mcp with the state directory's key", { timeout: 400_000 }, async () => {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"]);
    const env = { apiUrl: server.url, sandboxUrl: server.url, apiKey: server.apiKey, stateDir: instance.stateDir, instance: instance.instance, subnet: instance.subnet, imageDir: "" };
    const http = await connectBurrowMcp(env, "http");
    try {
      expect((await http.listTools()).tools.map((t) => t.name)).toContain("run_command");
      const { sandboxId } = data<{ sandboxId: string }>(await call(http, "create_sandbox", {}));
      expect(data(await call(http, "run_command", { sandboxId, command: "echo up" }))).toMatchObject({ exitCode: 0, stdout: "up\n" });

      // No E2B_API_KEY: `burrow mcp` reads the key from BURROW_STATE_DIR, like the other client commands.
      const stdio = new Client({ name: "burrow-up-e2e", version: "1.0.0" });
      await stdio.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [join(import.meta.dirname, "..", "..", "packages", "cli", "bin", "burrow.js"), "mcp"],
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", E2B_API_URL: server.url, BURROW_STATE_DIR: instance.stateDir },
          stderr: "inherit",
        }),
      );
      try {
        const listed = data<{ sandboxes: { sandboxId: string }[] }>(await call(stdio, "list_sandboxes", {}));
        expect(listed.sandboxes.map((s) => s.sandboxId)).toEqual([sandboxId]);
      } finally {
        await stdio.close();
      }
      expect(data(await call(http, "kill_sandbox", { sandboxId }))).toEqual({ sandboxId, killed: true });
    } finally {
      await http.close();
    }
  });
});
