// The create body's `mcp` field (E2B's MCP gateway): accepted and kept as E2B does. On a template without the
// gateway binary the official SDK then reports "Failed to start MCP gateway" and kills the sandbox, as on E2B.
import { describe, expect, it } from "vitest";
import { Sandbox, SandboxError } from "e2b";
import { burrowEnv, sdkOpts } from "./env.js";

describe("create with mcp", () => {
  it("is accepted over REST (201) and the sandbox runs", async () => {
    const env = burrowEnv();
    const res = await fetch(`${env.apiUrl}/sandboxes`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": env.apiKey },
      body: JSON.stringify({ templateID: "base", timeout: 60, mcp: { exa: { apiKey: "secret-value" } } }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { sandboxID: string };
    const sandbox = await Sandbox.connect(body.sandboxID, sdkOpts());
    try {
      expect((await sandbox.commands.run("echo up")).stdout).toBe("up\n");
    } finally {
      await sandbox.kill();
    }
  });

  it("through the SDK on a template without mcp-gateway fails like E2B and leaves nothing running", async () => {
    const before = (await Sandbox.list(sdkOpts()).nextItems()).map((s) => s.sandboxId);
    const error = await Sandbox.create("base", { ...sdkOpts(), mcp: { exa: { apiKey: "x" } } as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).toMatch(/Failed to start MCP gateway/);
    const after = (await Sandbox.list(sdkOpts()).nextItems()).map((s) => s.sandboxId);
    expect(after.filter((id) => !before.includes(id))).toEqual([]);
  });
});
