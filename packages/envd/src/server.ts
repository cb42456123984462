// envd's HTTP server. /health and /init, all a new sandbox needs before its create returns, are served by this
// module and the few small ones it imports; the rest (Connect-RPC process and filesystem services, /files, /envs,
// /metrics: routes.ts, with Connect and protobuf, most of envd's start-up cost) is loaded on its first request,
// right after /init has been answered, or once envd has been idle for a moment after starting (a pooled sandbox),
// whichever comes first. The load overlaps the orchestrator's and the client's own work instead of delaying the
// moment envd answers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { BurrowError } from "@burrow/protocol/errors";
import { checkAccessToken, isTokenExempt } from "./auth/access.js";
import type { EnvdContext } from "./context.js";
import { httpStatusOf } from "./http/http-error.js";
import { postInit } from "./http/init.js";
import { allowMethods } from "./http/methods.js";
import { sendEmpty, sendError } from "./http/respond.js";
import { createStderrLogger, type Logger } from "./log.js";
import { ProcessTable } from "./process/process-table.js";
import type { EnvdRoutes } from "./routes.js";
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

/** How long envd waits, after starting or after its last /health, before loading the rest on its own. */
const IDLE_LOAD_MS = 100;

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

/**
 * How long an idle keep-alive connection stays open. The gateway keeps its idle connections to envd for half of
 * this (packages/server/src/gateway/connections.ts), so that it is always the one to close them: a request sent on
 * a connection at the moment envd closes it would fail. Node's default (5 s) left only its 1 s margin, which a
 * gateway whose event loop runs late under load overran.
 */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;
/**
 * Connections waiting to be accepted. The gateway opens one per concurrent request to a sandbox; Node's default
 * (511) is below what a burst of parallel calls to one sandbox can reach (the kernel caps it at net.core.somaxconn,
 * 4096 by default, per network namespace).
 */
const LISTEN_BACKLOG = 4096;

/** Builds envd: the plain-HTTP endpoints and Connect-RPC (process, filesystem) on one node:http server. */
export function createEnvdServer(opts: EnvdServerOptions = {}): EnvdServer {
  const log = opts.logger ?? createStderrLogger();
  const context: EnvdContext = {
    state: new EnvdState(),
    users: new UserDb(opts.passwdPath, opts.groupPath),
    processes: new ProcessTable(),
    log,
  };

  let routes: EnvdRoutes | undefined;
  let loading: Promise<EnvdRoutes> | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  const loadRoutes = (): Promise<EnvdRoutes> => {
    clearTimeout(idleTimer);
    loading ??= import("./routes.js").then((m) => (routes = m.createEnvdRoutes(context)));
    return loading;
  };
  /** Load the rest soon, without delaying what is being answered now. */
  const loadSoon = (delayMs: number) => {
    if (loading) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => void loadRoutes().catch((err: unknown) => log.error("cannot load envd's routes", { err })), delayMs);
    idleTimer.unref();
  };

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
    if (path === "/health") {
      allowMethods(res, method, path, ["GET", "HEAD"]);
      loadSoon(IDLE_LOAD_MS);
      return sendEmpty(res, 204);
    }
    if (path === "/init") {
      allowMethods(res, method, path, ["POST"]);
      // Once the answer is out: the client's next request is on its way, and finds the rest loaded or loading.
      res.once("finish", () => loadSoon(0));
      return postInit(context, opts.initToken, req, res);
    }
    return (routes ?? (await loadRoutes())).handle(req, res, url);
  }

  const server = createServer({ requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS }, (req, res) => {
    for (const [k, v] of Object.entries(CORS_HEADERS)) res.setHeader(k, v);
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://envd");
    } catch {
      return sendError(res, 400, "malformed request URL");
    }
    route(req, res, url).catch((err: unknown) => {
      if (!(err instanceof BurrowError)) {
        log.error("request failed", { method: req.method, path: url.pathname, err });
      }
      if (err instanceof BurrowError) sendError(res, httpStatusOf(err), err.message);
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
        server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
          server.off("error", reject);
          loadSoon(IDLE_LOAD_MS);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    async close() {
      clearTimeout(idleTimer);
      routes?.close();
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
