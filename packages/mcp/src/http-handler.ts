// Burrow's MCP server over streamable HTTP, for mounting at /mcp on the Burrow server (or any node:http server).
// Stateless: each POST gets its own transport and a protocol handler of its own (a tool call streams its progress on that request's
// response), so nothing is held per client; what tools share lives in one session per API key.
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { createBurrowMcpServer } from "./create-server.js";
import { BurrowSession } from "./session.js";

/** Largest JSON-RPC body accepted (write_file content included). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const MAX_SESSIONS = 64;
/** Idle protocol handlers kept per session: building one (its tools and schemas) costs far more than a request. */
const IDLE_SERVERS_PER_SESSION = 8;

export interface McpHttpAuth {
  apiKey: string;
  /** The Burrow server the tools call (REST API and sandbox traffic). */
  serverUrl: string;
}

export type McpHttpHandler = (req: IncomingMessage, res: ServerResponse, auth: McpHttpAuth) => void;

class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BodyError(413, `request body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new BodyError(400, "Parse error: the body is not JSON");
  }
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

function wantsProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const meta = (m as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta;
    return meta?.progressToken !== undefined;
  });
}

export function createMcpHttpHandler(opts: { onError?: (error: unknown) => void } = {}): McpHttpHandler {
  const sessions = new Map<string, BurrowSession>();
  const idle = new WeakMap<BurrowSession, McpServer[]>();
  const sessionFor = (auth: McpHttpAuth): BurrowSession => {
    const key = createHash("sha256").update(`${auth.serverUrl}\n${auth.apiKey}`).digest("hex");
    let session = sessions.get(key);
    if (session) sessions.delete(key);
    else session = new BurrowSession({ apiUrl: auth.serverUrl, sandboxUrl: auth.serverUrl, apiKey: auth.apiKey });
    sessions.set(key, session);
    for (const oldest of sessions.keys()) {
      if (sessions.size <= MAX_SESSIONS) break;
      sessions.delete(oldest);
    }
    return session;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, auth: McpHttpAuth): Promise<void> => {
    if (req.method !== "POST") {
      // Stateless: no standalone SSE stream (GET) and no session to end (DELETE).
      res.writeHead(405, { allow: "POST", "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: send JSON-RPC messages with POST" }, id: null }));
      return;
    }
    let body: unknown;
    try {
      body = await readJson(req);
    } catch (error) {
      if (error instanceof BodyError) return jsonRpcError(res, error.status, error.status === 400 ? -32700 : -32600, error.message);
      throw error;
    }
    const session = sessionFor(auth);
    let pool = idle.get(session);
    if (!pool) idle.set(session, (pool = []));
    const server = pool.pop() ?? createBurrowMcpServer(session);
    // A plain JSON answer unless the client asked for progress (a progressToken): then an SSE stream carries it.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsProgress(body) });
    res.on("close", () => {
      // Closing the server closes its transport; once closed it can serve the next request.
      void server.close().then(() => {
        if (pool.length < IDLE_SERVERS_PER_SESSION) pool.push(server);
      });
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  return (req, res, auth) => {
    serve(req, res, auth).catch((error: unknown) => {
      opts.onError?.(error);
      jsonRpcError(res, 500, -32603, "Internal error");
    });
  };
}
