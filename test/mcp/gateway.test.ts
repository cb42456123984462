// The MCP gateway in sandboxes with the official e2b SDK: `Sandbox.create({ mcp })` starts the named stdio servers
// behind port 50005, and an MCP client reaches them through getMcpUrl() with getMcpToken(). The servers (a Node
// one bundled with the MCP SDK, a plain-Python one) are copied into a test template built on mcp-gateway through
// the Template API; nothing comes from the internet. Real sandboxes on the global test server.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { Sandbox, Template, type SandboxOpts } from "e2b";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const templateName = `mcp-echo-${suffix}`;
const fixtures = join(import.meta.dirname, "fixtures");
const context = mkdtempSync(join(tmpdir(), "burrow-mcp-gateway-"));
const pyServer = readFileSync(join(fixtures, "py_echo_mcp.py"), "utf8");
const sandboxes: Sandbox[] = [];

/** The gateway config: a command, an installed npm package and a Python module (three servers, colliding names). */
const mcpConfig = {
  alpha: { command: "node", args: ["/opt/echo-mcp/server.mjs", "--tool", "alpha_only"], env: { GREETING: "hi" } },
  beta: { npm: "@burrow-test/echo-mcp" },
  py: { python: "py_echo_mcp", cwd: "/opt/py-mcp" },
};

/** getMcpUrl() is https://50005-<id>.<domain>/mcp; the test server is plain HTTP on loopback, so requests go to it
 *  with the port and sandbox from that host name in E2B's routing headers, as the gateway routes them. */
function viaTestServer(): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return (url, init) => {
    const target = new URL(url);
    const match = /^(\d+)-([a-z0-9]+)\./.exec(target.hostname);
    if (!match) throw new Error(`not a sandbox host: ${target.hostname}`);
    const headers = new Headers(init?.headers);
    headers.set("E2b-Sandbox-Port", match[1]!);
    headers.set("E2b-Sandbox-Id", match[2]!);
    return fetch(new URL(`${target.pathname}${target.search}`, env.sandboxUrl), { ...init, headers });
  };
}

async function mcpClient(sandbox: Sandbox, token: string): Promise<Client> {
  const client = new Client({ name: "gateway-e2e", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(sandbox.getMcpUrl()), { fetch: viaTestServer(), requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}

async function create(opts: SandboxOpts): Promise<Sandbox> {
  const sandbox = await Sandbox.create({ ...conn, requestTimeoutMs: 0, ...opts });
  sandboxes.push(sandbox);
  return sandbox;
}

function text(result: unknown): string {
  return ((result as CallToolResult).content[0] as { text: string }).text;
}

beforeAll(async () => {
  await build({
    entryPoints: [join(fixtures, "echo-server.ts")],
    outfile: join(context, "echo-server.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    banner: { js: 'import { createRequire as __r } from "node:module"; const require = __r(import.meta.url);' },
  });
  mkdirSync(join(context, "echo-mcp", "bin"), { recursive: true });
  writeFileSync(join(context, "echo-mcp", "package.json"), JSON.stringify({ name: "@burrow-test/echo-mcp", version: "1.0.0", bin: { "echo-mcp": "bin/server.mjs" } }));
  copyFileSync(join(context, "echo-server.mjs"), join(context, "echo-mcp", "bin", "server.mjs"));
  copyFileSync(join(fixtures, "py_echo_mcp.py"), join(context, "py_echo_mcp.py"));
  // mcp-gateway is built the first time a sandbox asks for it (as the SDK's default for `mcp`); then the test
  // template is built on it.
  const first = await Sandbox.create("mcp-gateway", { ...conn, requestTimeoutMs: 0 });
  await first.kill();
  const template = Template({ fileContextPath: context })
    .fromTemplate("mcp-gateway")
    .copy("echo-server.mjs", "/opt/echo-mcp/server.mjs", { user: "root" })
    .copy("echo-mcp", "/usr/local/lib/node_modules/@burrow-test/echo-mcp", { user: "root" })
    .copy("py_echo_mcp.py", "/opt/py-mcp/py_echo_mcp.py", { user: "root" });
  await Template.build(template, templateName, conn);
}, 900_000);

afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.kill().catch(() => undefined)));
  await fetch(`${env.apiUrl}/templates/${templateName}`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
  rmSync(context, { recursive: true, force: true });
});

describe("MCP gateway in sandboxes (official SDK)", () => {
  test("create with mcp: the tools of every server through getMcpUrl() and getMcpToken()", { timeout: 180_000 }, async () => {
    const sandbox = await create({ template: templateName, mcp: mcpConfig as SandboxOpts["mcp"] });
    expect(sandbox.getMcpUrl()).toMatch(new RegExp(`^https://50005-${sandbox.sandboxId}\\.[^/]+/mcp$`));
    const token = await sandbox.getMcpToken();
    expect(token).toEqual(expect.any(String));
    // Another handle reads the token the gateway wrote to /etc/mcp-gateway/.token (as root).
    const other = await Sandbox.connect(sandbox.sandboxId, conn);
    expect(await other.getMcpToken()).toBe(token);

    const client = await mcpClient(sandbox, token!);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual(["alpha__crash", "alpha__echo", "alpha__whoami", "alpha_only", "beta__crash", "beta__echo", "beta__whoami", "py_add"]);
      expect(text(await client.callTool({ name: "beta__echo", arguments: { text: "through the gateway" } }))).toBe("echo: through the gateway");
      expect(text(await client.callTool({ name: "alpha_only" }))).toBe("alpha_only here");
      expect(text(await client.callTool({ name: "py_add", arguments: { a: 40, b: 2 } }))).toBe("42");

      // Servers run as `user`, with the environment from the config and without the gateway's token.
      const who = JSON.parse(text(await client.callTool({ name: "alpha__whoami" }))) as Record<string, unknown>;
      expect(who).toMatchObject({ uid: 1000, gid: 1000, home: "/home/user", greeting: "hi", hasGatewayToken: false });

      // A crash is reported in the call that hit it; the server is restarted.
      const crashed = (await client.callTool({ name: "alpha__crash" })) as CallToolResult;
      expect(crashed.isError).toBe(true);
      expect(text(crashed)).toContain("MCP server 'alpha' crashed while handling the call (exit code 3)");
      expect(text(await client.callTool({ name: "alpha__echo", arguments: { text: "again" } }))).toBe("echo: again");
    } finally {
      await client.close();
    }

    // The token file is root's alone.
    const asUser = await sandbox.commands.run("cat /etc/mcp-gateway/.token", { user: "user" }).catch((e: { exitCode?: number; stderr?: string }) => e);
    expect((asUser as { exitCode?: number }).exitCode).not.toBe(0);
    expect((await sandbox.commands.run("stat -c '%U %a' /etc/mcp-gateway/.token", { user: "root" })).stdout.trim()).toBe("root 600");
  });

  test("a wrong or missing token is refused", { timeout: 120_000 }, async () => {
    const sandbox = await create({ template: templateName, mcp: { py: mcpConfig.py } as SandboxOpts["mcp"] });
    await expect(mcpClient(sandbox, "not-the-token")).rejects.toThrow(/missing or invalid bearer token/);
    const res = await viaTestServer()(sandbox.getMcpUrl(), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
  });

  test("without a template the SDK picks mcp-gateway; a server given as a command runs there", { timeout: 120_000 }, async () => {
    const sandbox = await create({ mcp: { calc: { command: "python3", args: ["-c", pyServer] } } as SandboxOpts["mcp"] });
    const client = await mcpClient(sandbox, (await sandbox.getMcpToken())!);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["py_add"]);
      expect(text(await client.callTool({ name: "py_add", arguments: { a: 1, b: 2 } }))).toBe("3");
    } finally {
      await client.close();
    }
  });

  test("what cannot start is reported by the SDK as 'Failed to start MCP gateway', and the sandbox is killed", { timeout: 120_000 }, async () => {
    const before = new Set((await Sandbox.list(conn).nextItems()).map((s) => s.sandboxId));
    // base has no gateway (as on E2B).
    await expect(Sandbox.create({ ...conn, template: "base", mcp: { calc: { command: "python3" } } as SandboxOpts["mcp"] })).rejects.toThrow(
      /Failed to start MCP gateway/,
    );
    // Docker MCP catalog servers are not available: the reason says what works.
    await expect(Sandbox.create({ ...conn, template: templateName, mcp: { exa: { apiKey: "k" } } as SandboxOpts["mcp"] })).rejects.toThrow(
      /Failed to start MCP gateway: .*servers from Docker's MCP catalog are not available/,
    );
    // A server that dies at start: its stderr is in the reason.
    await expect(
      Sandbox.create({ ...conn, template: templateName, mcp: { dies: { command: "sh", args: ["-c", "echo cannot start >&2; exit 1"] } } as SandboxOpts["mcp"] }),
    ).rejects.toThrow(/Failed to start MCP gateway: .*MCP server 'dies' did not start.*cannot start/s);
    const after = (await Sandbox.list(conn).nextItems()).map((s) => s.sandboxId).filter((id) => !before.has(id));
    expect(after).toEqual([]);
  });
});
