// The gateway's configuration: the create body's `mcp` field as the official SDK passes it (`mcp-gateway --config
// '<json>'`). Each key names one stdio MCP server present in the template, given by command, npm package or Python
// module. Servers from Docker's MCP catalog (E2B's own gateway) need Docker and the internet, so an entry in that
// shape is refused with a message saying what works here.
import { z } from "zod";

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const env = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "environment variable names are letters, digits and _"), z.string());
const args = z.array(z.string()).max(256);
const common = { args: args.optional(), env: env.optional(), cwd: z.string().startsWith("/", "cwd must be an absolute path").optional() };

const commandServer = z.strictObject({ command: z.string().min(1), ...common });
const npmServer = z.strictObject({ npm: z.string().min(1), bin: z.string().min(1).optional(), ...common });
const pythonServer = z.strictObject({ python: z.string().regex(/^[A-Za-z_][A-Za-z0-9_.]*$/, "a Python module name"), ...common });

export type CommandServerConfig = z.infer<typeof commandServer>;
export type NpmServerConfig = z.infer<typeof npmServer>;
export type PythonServerConfig = z.infer<typeof pythonServer>;
export type ServerConfig = CommandServerConfig | NpmServerConfig | PythonServerConfig;

export class GatewayConfigError extends Error {
  override readonly name = "GatewayConfigError";
}

function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length > 0 ? i.path.join(".") + ": " : ""}${i.message}`).join("; ");
}

function parseServer(name: string, value: unknown): ServerConfig {
  if (!NAME.test(name)) {
    throw new GatewayConfigError(
      `server name '${name}' is not usable here: names are letters, digits, '.', '_' and '-' (catalog and github/ servers need Docker and the internet)`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GatewayConfigError(`server '${name}': expected an object such as {"command": "…", "args": […]}`);
  }
  const keys = Object.keys(value);
  const kinds = (["command", "npm", "python"] as const).filter((k) => keys.includes(k));
  if (kinds.length === 0) {
    throw new GatewayConfigError(
      `server '${name}': Burrow's gateway runs stdio MCP servers present in the template, named by "command", "npm" (an installed package) or "python" (a module); ` +
        "servers from Docker's MCP catalog are not available",
    );
  }
  if (kinds.length > 1) throw new GatewayConfigError(`server '${name}': give only one of "command", "npm" and "python"`);
  const schema = kinds[0] === "command" ? commandServer : kinds[0] === "npm" ? npmServer : pythonServer;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new GatewayConfigError(`server '${name}': ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** Parse `--config`'s JSON; throws GatewayConfigError with a message fit for the SDK's "Failed to start MCP gateway". */
export function parseGatewayConfig(json: string): Map<string, ServerConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (cause) {
    throw new GatewayConfigError(`--config is not valid JSON: ${(cause as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new GatewayConfigError('--config must be a JSON object of servers, e.g. {"files": {"command": "my-mcp-server"}}');
  }
  const servers = new Map<string, ServerConfig>();
  for (const [name, value] of Object.entries(raw)) servers.set(name, parseServer(name, value));
  if (servers.size === 0) throw new GatewayConfigError("--config names no MCP server");
  if (servers.size > 32) throw new GatewayConfigError("--config names more than 32 MCP servers");
  return servers;
}
