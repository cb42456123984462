// The execution server's HTTP side (port 49999): E2B's code-interpreter protocol on plain node:http, with CORS
// open like E2B's and idle keep-alive connections held long (the SDKs pool them).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { BurrowError } from "@burrow/protocol/errors";
import type { ContextRegistry } from "../contexts/context-registry.js";
import type { Logger } from "../log.js";
import type { AccessGuard } from "./access.js";
import { handleCreateContext, handleListContexts, handleRemoveContext, handleRestartContext } from "./context-routes.js";
import { handleExecute } from "./execute-route.js";
import type { ExecutionResponseOptions } from "./execution-response.js";
import { sendError, sendJson } from "./respond.js";

/** Idle keep-alive connections stay open this long (as E2B's uvicorn --timeout-keep-alive 640). */
const KEEP_ALIVE_MS = 640_000;

export type Health = { state: "starting" } | { state: "ready" } | { state: "failed"; message: string };

export interface ServerDeps {
  registry: ContextRegistry;
  access: AccessGuard;
  response: ExecutionResponseOptions;
  defaultTimeoutMs: number;
  health: () => Health;
  logger: Logger;
}

const CONTEXT_PATH = /^\/contexts\/([^/]+)(\/restart)?$/;

function methodNotAllowed(res: ServerResponse): void {
  sendJson(res, 405, { detail: "Method Not Allowed" });
}

async function route(req: IncomingMessage, res: ServerResponse, deps: ServerDeps): Promise<void> {
  const method = req.method ?? "GET";
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (method === "OPTIONS") {
    res.writeHead(204, {
      "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
      "Access-Control-Allow-Headers": req.headers["access-control-request-headers"] ?? "*",
      "Access-Control-Max-Age": "86400",
    });
    res.end();
    return;
  }
  if (path === "/health") {
    if (method !== "GET" && method !== "HEAD") return methodNotAllowed(res);
    const health = deps.health();
    if (health.state === "ready") return sendJson(res, 200, "OK");
    return sendJson(res, 503, health.state === "starting" ? "starting" : health.message);
  }
  if (path === "/execute") {
    if (method !== "POST") return methodNotAllowed(res);
    return handleExecute(req, res, deps);
  }
  if (path === "/contexts") {
    if (method === "POST") return handleCreateContext(req, res, deps);
    if (method === "GET") return handleListContexts(req, res, deps);
    return methodNotAllowed(res);
  }
  const match = CONTEXT_PATH.exec(path);
  if (match) {
    const id = decodeURIComponent(match[1]!);
    if (match[2]) return method === "POST" ? handleRestartContext(req, res, id, deps) : methodNotAllowed(res);
    return method === "DELETE" ? handleRemoveContext(req, res, id, deps) : methodNotAllowed(res);
  }
  sendJson(res, 404, { detail: "Not Found" });
}

export function createExecutionServer(deps: ServerDeps): Server {
  const server = createServer({ requestTimeout: 0, headersTimeout: 60_000 }, (req, res) => {
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.setHeader("Access-Control-Expose-Headers", "*");
    route(req, res, deps).catch((error: unknown) => {
      if (!(error instanceof BurrowError)) deps.logger.error("request failed", { method: req.method, url: req.url, err: error });
      if (!res.headersSent) sendError(res, error);
      else res.destroy();
      if (!req.complete) req.resume();
    });
  });
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    else socket.destroy();
  });
  return server;
}
