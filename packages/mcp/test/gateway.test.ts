// The MCP gateway on the host, as the SDK runs it in a sandbox: `mcp-gateway --config` returns once it serves;
// an MCP client lists and calls the tools of two stdio servers (names colliding, so prefixed), the servers run as
// an unprivileged user without the gateway's token, a crash is reported in the call that hit it and the server
// comes back, and a wrong token is refused. Real processes throughout; the sandbox version is test/mcp.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const root = join(import.meta.dirname, "..", "..", "..");
const dir = mkdtempSync(join(tmpdir(), "burrow-gateway-test-"));
const gatewayJs = join(dir, "gateway.mjs");
const serverJs = join(dir, "echo-server.mjs");
const token = `t-${Math.random().toString(36).slice(2)}`;
let port = 0;
const pids: number[] = [];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function runGateway(config: unknown, extraEnv: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [gatewayJs, "--config", typeof config === "string" ? config : JSON.stringify(config)], {
    encoding: "utf8",
    timeout: 60_000,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      MCP_GATEWAY_PORT: String(port),
      MCP_GATEWAY_HOST: "127.0.0.1",
      MCP_GATEWAY_TOKEN_FILE: join(dir, "etc", ".token"),
      MCP_GATEWAY_LOG: join(dir, "gateway.log"),
      MCP_GATEWAY_USER: "nobody",
      GATEWAY_ACCESS_TOKEN: token,
      ...extraEnv,
    },
  });
  const pid = /\(pid (\d+)\)/.exec(result.stdout)?.[1];
  if (pid) pids.push(Number(pid));
  return result;
}

async function connect(bearer = token): Promise<Client> {
  const client = new Client({ name: "gateway-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  await client.connect(transport);
  return client;
}

function text(result: unknown): string {
  return ((result as CallToolResult).content[0] as { text: string }).text;
}

// alpha by command, beta as an installed npm package (run with the `node` on PATH), py as a Python module.
const serverConfig = () => ({
  alpha: { command: process.execPath, args: [serverJs, "--tool", "alpha_only"], env: { GREETING: "hi" }, cwd: dir },
  beta: { npm: "@burrow-test/echo-mcp", cwd: dir },
  py: { python: "py_echo_mcp", cwd: dir },
});

beforeAll(async () => {
  const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning" } as const;
  const requireShim = { js: 'import { createRequire as __r } from "node:module"; const require = __r(import.meta.url);' };
  await build({ ...common, entryPoints: [join(root, "packages", "mcp", "src", "gateway", "main.ts")], outfile: gatewayJs, banner: requireShim });
  await build({ ...common, entryPoints: [join(root, "test", "mcp", "fixtures", "echo-server.ts")], outfile: serverJs, banner: requireShim });
  const pkg = join(dir, "node_modules", "@burrow-test", "echo-mcp");
  mkdirSync(join(pkg, "bin"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@burrow-test/echo-mcp", version: "1.0.0", bin: { "echo-mcp": "bin/server.mjs" } }));
  copyFileSync(serverJs, join(pkg, "bin", "server.mjs"));
  copyFileSync(join(root, "test", "mcp", "fixtures", "py_echo_mcp.py"), join(dir, "py_echo_mcp.py"));
  // The servers run as nobody: they must be able to read their scripts.
  for (const d of [dir, join(dir, "node_modules"), join(dir, "node_modules", "@burrow-test"), pkg, join(pkg, "bin")]) chmodSync(d, 0o755);
  port = await freePort();
}, 120_000);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

afterAll(async () => {
  // SIGTERM: the gateway stops its servers (their process groups) before it exits.
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  for (let i = 0; i < 100 && pids.some(alive); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  for (const pid of pids.filter(alive)) process.kill(-pid, "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("mcp-gateway", () => {
  test("refuses catalog servers and bad configs with a reason, exit 1", () => {
    const catalog = runGateway({ exa: { apiKey: "k" } });
    expect(catalog.status).toBe(1);
    expect(catalog.stderr).toContain("servers from Docker's MCP catalog are not available");
    const missing = runGateway({ gone: { command: "no-such-mcp-server", cwd: dir } });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("command 'no-such-mcp-server' not found");
    const noHome = runGateway({ homeless: { command: "/bin/true" } });
    expect(noHome.status).toBe(1);
    expect(noHome.stderr).toContain("working directory '/nonexistent' does not exist");
    const notJson = runGateway("{nope");
    expect(notJson.status).toBe(1);
    expect(notJson.stderr).toContain("not valid JSON");
    const dies = runGateway({ dies: { command: "/bin/sh", args: ["-c", "echo broken config >&2; exit 7"], cwd: dir } });
    expect(dies.status).toBe(1);
    expect(dies.stderr).toContain("MCP server 'dies' did not start");
    expect(dies.stderr).toContain("broken config");
  });

  test("serves the tools of every server, as the sandbox user, and survives a crash", async () => {
    const started = runGateway(serverConfig());
    expect(started.stderr).toBe("");
    expect(started.status).toBe(0);
    const tokenFile = join(dir, "etc", ".token");
    expect(readFileSync(tokenFile, "utf8")).toBe(token);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);

    const client = await connect();
    try {
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      // echo, whoami and crash exist on both servers: prefixed; alpha_only is alpha's alone: as it is.
      expect(names).toEqual(["alpha__crash", "alpha__echo", "alpha__whoami", "alpha_only", "beta__crash", "beta__echo", "beta__whoami", "py_add"]);
      expect(text(await client.callTool({ name: "py_add", arguments: { a: 2, b: 40 } }))).toBe("42");
      expect(text(await client.callTool({ name: "alpha__echo", arguments: { text: "hello" } }))).toBe("echo: hello");
      expect(text(await client.callTool({ name: "alpha_only" }))).toBe("alpha_only here");

      const who = JSON.parse(text(await client.callTool({ name: "alpha__whoami" }))) as Record<string, unknown>;
      expect(who).toMatchObject({ uid: 65534, greeting: "hi", hasGatewayToken: false, groups: "" });

      const crashed = (await client.callTool({ name: "beta__crash" })) as CallToolResult;
      expect(crashed.isError).toBe(true);
      expect(text(crashed)).toMatch(/MCP server 'beta' crashed while handling the call \(exit code 3\): crashing on purpose/);
      // The next call waits for the restart and is served by a new process.
      const again = JSON.parse(text(await client.callTool({ name: "beta__whoami" }))) as { pid: number };
      expect(again.pid).toEqual(expect.any(Number));
      expect(text(await client.callTool({ name: "beta__echo", arguments: { text: "back" } }))).toBe("echo: back");

      const unknown = (await client.callTool({ name: "nope" })) as CallToolResult;
      expect(unknown.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  test("a wrong or missing token is refused", async () => {
    await expect(connect("wrong-token")).rejects.toThrow(/missing or invalid bearer token/);
    const res = await fetch(`http://127.0.0.1:${port}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(401);
  });

  test("a second gateway on the same port says so", () => {
    const second = runGateway(serverConfig());
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`port ${port} is in use`);
  });
});
