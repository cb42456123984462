import { Filesystem, Process } from "@burrow/protocol";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { checkAccessToken, isTokenExempt } from "./auth/access.js";
import type { EnvdContext } from "./context.js";
import { HttpError } from "./errors.js";
import { createFilesystemService } from "./filesystem/filesystem-service.js";
import { WatcherRegistry } from "./filesystem/watch/watcher-registry.js";
import { postCompose } from "./http/files-compose.js";
import { getFile } from "./http/files-get.js";
import { postFiles } from "./http/files-post.js";
import { postInit } from "./http/init.js";
import { createMetricsReader } from "./http/metrics.js";
import { sendEmpty, sendError, sendJson } from "./http/respond.js";
import { createStderrLogger, type Logger } from "./log.js";
import { createProcessService } from "./process/process-service.js";
import { ProcessTable } from "./process/process-table.js";
import { EnvdState } from "./state.js";
import { UserDb } from "./users/user-db.js";

export interface EnvdServerOptions {
  /** Secret required on POST /init; see `resolveEnvdConfigFromEnv`. */
  initToken?: string;
  logger?: Logger;
  /** For tests: alternative /etc/passwd and /etc/group. */
  passwdPath?: string;
  groupPath?: string;
}

export interface EnvdServer {
  readonly server: Server;
  readonly context: EnvdContext;
  listen(port: number, host: string): Promise<AddressInfo>;
  /** Stops accepting, ends streams, kills the processes envd started. */
  close(): Promise<void>;
}

const RPC_PREFIXES = [`/${Process.typeName}/`, `/${Filesystem.typeName}/`];
const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "*",
};

// After an early error the rest of the upload is read and dropped so the client sees the response rather than
// a reset; a large remainder is not worth reading, so then the connection is dropped.
const MAX_DISCARD_BYTES = 1024 * 1024;
function discardBody(req: IncomingMessage): void {
  let seen = 0;
  req.unpipe();
  req.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > MAX_DISCARD_BYTES) req.destroy();
  });
  req.resume();
}

/** Builds envd: Connect-RPC (process, filesystem) and the plain-HTTP endpoints on one node:http server. */
export function createEnvdServer(opts: EnvdServerOptions = {}): EnvdServer {
  const log = opts.logger ?? createStderrLogger();
  const context: EnvdContext = {
    state: new EnvdState(),
    users: new UserDb(opts.passwdPath, opts.groupPath),
    processes: new ProcessTable(),
    log,
  };
  const watchers = new WatcherRegistry(context.users);
  const shutdown = new AbortController();
  const rpc = connectNodeAdapter({
    routes(router) {
      router.service(Process, createProcessService(context));
      router.service(Filesystem, createFilesystemService(context, watchers));
    },
    grpc: false,
    grpcWeb: false,
    connect: true,
    jsonOptions: { ignoreUnknownFields: true },
    readMaxBytes: 32 * 1024 * 1024,
    shutdownSignal: shutdown.signal,
  });
  const metrics = createMetricsReader();

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? "GET";
    const path = url.pathname;
    if (method === "OPTIONS") {
      res.writeHead(204, {
        "Access-Control-Allow-Methods": "GET, POST, PUT, DELETE, OPTIONS",
        "Access-Control-Allow-Headers": req.headers["access-control-request-headers"] ?? "*",
        "Access-Control-Max-Age": "86400",
      });
      return void res.end();
    }
    if (!isTokenExempt(method, path)) {
      const h = req.headers["x-access-token"];
      checkAccessToken(context.state.accessToken, Array.isArray(h) ? h[0] : h);
    }
    if (RPC_PREFIXES.some((p) => path.startsWith(p))) return rpc(req, res);
    const known = (allowed: string[]): boolean => {
      if (allowed.includes(method)) return true;
      res.setHeader("Allow", allowed.join(", "));
      throw new HttpError(405, `method ${method} not allowed on ${path}`);
    };
    switch (path) {
      case "/health":
        if (known(["GET", "HEAD"])) return sendEmpty(res, 204);
        return;
      case "/files":
        if (known(["GET", "HEAD", "POST"])) {
          return method === "POST" ? postFiles(context, req, res, url) : getFile(context, req, res, url);
        }
        return;
      case "/files/compose":
        if (known(["POST"])) return postCompose(context, req, res);
        return;
      case "/init":
        if (known(["POST"])) return postInit(context, opts.initToken, req, res);
        return;
      case "/envs":
        if (known(["GET"])) return sendJson(res, 200, Object.fromEntries(context.state.envVars));
        return;
      case "/metrics":
        if (known(["GET"])) return sendJson(res, 200, await metrics());
        return;
      default:
        throw new HttpError(404, `path '${path}' not found`);
    }
  }

  const server = createServer({ requestTimeout: 0, headersTimeout: 60_000 }, (req, res) => {
    for (const [k, v] of Object.entries(CORS_HEADERS)) res.setHeader(k, v);
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://envd");
    } catch {
      return sendError(res, 400, "malformed request URL");
    }
    route(req, res, url).catch((err: unknown) => {
      if (!(err instanceof HttpError)) {
        log.error("request failed", { method: req.method, path: url.pathname, err });
      }
      if (err instanceof HttpError) sendError(res, err.status, err.message);
      else sendError(res, 500, err instanceof Error ? err.message : "internal error");
      if (!req.complete) discardBody(req);
    });
  });
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    else socket.destroy();
  });

  return {
    server,
    context,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    async close() {
      shutdown.abort();
      watchers.closeAll();
      context.processes.killAll();
      server.closeIdleConnections();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, 2000).unref();
      });
    },
  };
}
