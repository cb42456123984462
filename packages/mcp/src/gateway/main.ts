// `mcp-gateway`, the command the official SDK runs (as root) in sandboxes created with `mcp`:
//   mcp-gateway --config '<json>'   start the gateway in the background; exit 0 once it serves, 1 with the reason
//   mcp-gateway serve               (internal) the gateway itself, started by the above
// The gateway runs each configured stdio MCP server as `user`, serves their tools at http://0.0.0.0:50005/mcp behind
// a bearer token (GATEWAY_ACCESS_TOKEN, else a random one) and writes that token to /etc/mcp-gateway/.token (root
// only), where the SDK's getMcpToken() reads it.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, openSync, writeFileSync, chmodSync } from "node:fs";
import { Socket } from "node:net";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { GatewayConfigError, parseGatewayConfig } from "./gateway-config.js";
import { GatewayServer } from "./gateway-server.js";
import { lookupAccount, serverCommand } from "./server-command.js";
import { UpstreamServer } from "./upstream-server.js";

const VERSION = "1.0.0";
const env = process.env;
const PORT = Number(env.MCP_GATEWAY_PORT ?? 50005);
const HOST = env.MCP_GATEWAY_HOST ?? "0.0.0.0";
const TOKEN_FILE = env.MCP_GATEWAY_TOKEN_FILE ?? "/etc/mcp-gateway/.token";
const LOG_FILE = env.MCP_GATEWAY_LOG ?? "/var/log/mcp-gateway.log";
const USER = env.MCP_GATEWAY_USER ?? "user";
/** The SDK waits 60 s for the command; the gateway gives up a little earlier, with a reason. */
const START_TIMEOUT_MS = 50_000;

const USAGE = `usage: mcp-gateway --config '<json>'

Starts Burrow's MCP gateway in the background and exits once it serves MCP (streamable HTTP) at
http://0.0.0.0:${PORT}/mcp. The JSON names stdio MCP servers present in this template:
  {"<name>": {"command": "<program>", "args": [...], "env": {...}, "cwd": "/dir"}}
  {"<name>": {"npm": "<installed package>", "bin": "<command, if several>", "args": [...], "env": {...}}}
  {"<name>": {"python": "<module>", "args": [...], "env": {...}}}
Servers run as '${USER}'. Clients authenticate with 'Authorization: Bearer <token>' (GATEWAY_ACCESS_TOKEN, stored
in ${TOKEN_FILE}).`;

function fail(message: string): never {
  process.stderr.write(`mcp-gateway: ${message}\n`);
  process.exit(1);
}

/** The argv that runs this program again: the wrapper script in templates, else node and this file. */
function selfCommand(): string[] {
  return env.MCP_GATEWAY_SELF ? [env.MCP_GATEWAY_SELF] : [process.execPath, process.argv[1]!];
}

async function launch(configJson: string): Promise<void> {
  parseGatewayConfig(configJson);
  const token = env.GATEWAY_ACCESS_TOKEN || randomUUID();
  mkdirSync(dirname(LOG_FILE), { recursive: true });
  const log = openSync(LOG_FILE, "a", 0o600);
  const [file, ...args] = selfCommand();
  const child = spawn(file!, [...args, "serve"], {
    detached: true,
    stdio: ["ignore", log, log, "pipe"],
    env: { ...env, MCP_GATEWAY_CONFIG: configJson, GATEWAY_ACCESS_TOKEN: token },
  });
  const status = child.stdio[3] as Socket;
  const answer = await new Promise<string>((resolve) => {
    let text = "";
    const timer = setTimeout(() => resolve(JSON.stringify({ error: `the gateway did not start within ${START_TIMEOUT_MS / 1000} s` })), START_TIMEOUT_MS);
    status.on("data", (chunk: Buffer) => (text += chunk.toString()));
    status.on("close", () => {
      clearTimeout(timer);
      resolve(text || JSON.stringify({ error: `the gateway exited before serving (see ${LOG_FILE})` }));
    });
    status.on("error", () => undefined);
  });
  let result: { ok?: boolean; error?: string };
  try {
    result = JSON.parse(answer.trim().split("\n")[0] ?? "{}") as typeof result;
  } catch {
    result = { error: answer };
  }
  if (!result.ok) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
    fail(result.error ?? "the gateway did not start");
  }
  status.destroy();
  child.unref();
  process.stdout.write(`MCP gateway listening on http://${HOST}:${PORT}/mcp (pid ${child.pid})\n`);
}

async function serve(): Promise<void> {
  const status = new Socket({ fd: 3, readable: false, writable: true });
  status.on("error", () => undefined);
  const report = (body: { ok: true } | { error: string }) => new Promise<void>((resolve) => status.end(`${JSON.stringify(body)}\n`, () => resolve()));
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  const configJson = env.MCP_GATEWAY_CONFIG ?? "";
  const token = env.GATEWAY_ACCESS_TOKEN ?? "";
  // Nothing started from here (MCP servers run with an environment of their own anyway) inherits these.
  delete env.MCP_GATEWAY_CONFIG;
  delete env.GATEWAY_ACCESS_TOKEN;
  const servers: UpstreamServer[] = [];
  try {
    if (!token) throw new Error("no access token");
    const config = parseGatewayConfig(configJson);
    const account = lookupAccount(USER);
    for (const [name, server] of config) {
      const spec = serverCommand(name, server, { account, fallbackPath: env.MCP_GATEWAY_FALLBACK_PATH });
      servers.push(new UpstreamServer(name, spec, account, log));
    }
    const started = await Promise.allSettled(servers.map((s) => s.start()));
    const failed = started.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
    if (failed.length > 0) throw new Error(failed.join("\n"));
    const gateway = new GatewayServer({ servers, token, version: VERSION, log });
    mkdirSync(dirname(TOKEN_FILE), { recursive: true, mode: 0o755 });
    writeFileSync(TOKEN_FILE, token, { mode: 0o600 });
    chmodSync(TOKEN_FILE, 0o600);
    await gateway.listen(PORT, HOST).catch((error: NodeJS.ErrnoException) => {
      throw new Error(error.code === "EADDRINUSE" ? `port ${PORT} is in use (is a gateway already running?)` : error.message);
    });
    log(`serving ${servers.length} server(s) on http://${HOST}:${PORT}/mcp`);
    await report({ ok: true });
    const stop = async () => {
      await gateway.close();
      await Promise.allSettled(servers.map((s) => s.close()));
      process.exit(0);
    };
    process.once("SIGTERM", () => void stop());
    process.once("SIGINT", () => void stop());
  } catch (error) {
    const message = error instanceof GatewayConfigError || error instanceof Error ? error.message : String(error);
    log(`start failed: ${message}`);
    await Promise.allSettled(servers.map((s) => s.close()));
    await report({ error: message });
    process.exit(1);
  }
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === "serve") return serve();
  if (argv[0] === "pull") {
    fail("servers from Docker's MCP catalog are not available here: install the server in the template and name it by command, npm package or Python module");
  }
  let values: { config?: string | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({ args: argv, options: { config: { type: "string" }, help: { type: "boolean", short: "h" } }, strict: true }));
  } catch (error) {
    fail(`${(error as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.config === undefined) fail(`--config is required\n${USAGE}`);
  await launch(values.config);
}

main(process.argv.slice(2)).catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));
