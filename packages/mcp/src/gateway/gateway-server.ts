// The gateway's endpoint: MCP over streamable HTTP at /mcp with a bearer token, forwarding tools/list and
// tools/call to the configured servers. Stateless: each request gets its own protocol handler, so nothing is kept
// per client and any number of clients (or reconnects) work alike.
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { routeTools, type RoutedTool } from "./tool-names.js";
import { toolError, type UpstreamServer } from "./upstream-server.js";

export interface GatewayServerOptions {
  servers: readonly UpstreamServer[];
  token: string;
  version: string;
  log: (line: string) => void;
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

export class GatewayServer {
  private routes = new Map<string, RoutedTool>();
  private readonly http: HttpServer;
  private readonly tokenDigest: Buffer;

  constructor(private readonly opts: GatewayServerOptions) {
    this.tokenDigest = digest(opts.token);
    this.refreshRoutes();
    for (const s of opts.servers) s.onToolsChanged = () => this.refreshRoutes();
    this.http = createServer((req, res) => void this.handle(req, res).catch((error: unknown) => this.fail(res, error)));
  }

  private refreshRoutes(): void {
    this.routes = routeTools(this.opts.servers.map((s) => ({ name: s.name, tools: s.tools })));
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.http.once("error", reject);
      this.http.listen(port, host, () => {
        this.http.off("error", reject);
        resolve();
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private authorized(req: IncomingMessage): boolean {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
    return match !== null && timingSafeEqual(digest(match[1]!), this.tokenDigest);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/mcp" && path !== "/mcp/") return json(res, 404, { error: "not found: the MCP endpoint is /mcp" });
    if (!this.authorized(req)) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="mcp-gateway"');
      return json(res, 401, { error: "missing or invalid bearer token" });
    }
    const server = this.protocolServer();
    // Plain JSON answers: nothing is streamed back (servers' progress is not forwarded).
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  private protocolServer(): Server {
    const server = new Server({ name: "burrow-mcp-gateway", version: this.opts.version }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...this.routes.values()].map((r) => r.tool) }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const route = this.routes.get(request.params.name);
      if (!route) return toolError(`unknown tool '${request.params.name}'`);
      const upstream = this.opts.servers.find((s) => s.name === route.server)!;
      try {
        return await upstream.callTool(route.name, request.params.arguments, extra.signal);
      } catch (error) {
        return toolError(`MCP server '${route.server}': ${(error as Error).message}`);
      }
    });
    return server;
  }

  private fail(res: ServerResponse, error: unknown): void {
    this.opts.log(`request failed: ${(error as Error).stack ?? String(error)}`);
    if (!res.headersSent) json(res, 500, { error: "internal gateway error" });
    else res.destroy();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
