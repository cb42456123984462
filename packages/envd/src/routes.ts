// Everything envd serves besides /health and /init: the Connect-RPC process and filesystem services, /files,
// /files/compose, /envs and /metrics. Loaded by server.ts on first use or once envd is idle after starting (it
// pulls in Connect, protobuf and the services, most of envd's start-up cost), so a new sandbox answers its
// orchestrator sooner.
import { Filesystem, Process } from "@burrow/protocol";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { IncomingMessage, ServerResponse } from "node:http";
import { BurrowError, Code } from "@burrow/protocol/errors";
import type { EnvdContext } from "./context.js";
import { createFilesystemService } from "./filesystem/filesystem-service.js";
import { WatcherRegistry } from "./filesystem/watch/watcher-registry.js";
import { postCompose } from "./http/files-compose.js";
import { getFile } from "./http/files-get.js";
import { postFiles } from "./http/files-post.js";
import { createMetricsReader } from "./http/metrics.js";
import { allowMethods } from "./http/methods.js";
import { sendJson } from "./http/respond.js";
import { createProcessService } from "./process/process-service.js";

export interface EnvdRoutes {
  /** Serve a request that is not /health or /init (its access token already checked). */
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  /** End RPC streams and file watches (envd is stopping). */
  close(): void;
}

const RPC_PREFIXES = [`/${Process.typeName}/`, `/${Filesystem.typeName}/`];

export function createEnvdRoutes(context: EnvdContext): EnvdRoutes {
  // Connect's Node adapter turns each request's headers into a fetch `Headers`. Node 20 defines that global lazily:
  // its first use loads Node's whole fetch implementation (undici), about 20 ms of CPU, which was most of what a
  // sandbox's first command cost more than the next ones. Touched here, it loads while envd is idle.
  void globalThis.Headers;
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

  return {
    async handle(req, res, url) {
      const method = req.method ?? "GET";
      const path = url.pathname;
      if (RPC_PREFIXES.some((p) => path.startsWith(p))) return rpc(req, res);
      switch (path) {
        case "/files":
          allowMethods(res, method, path, ["GET", "HEAD", "POST"]);
          return method === "POST" ? postFiles(context, req, res, url) : getFile(context, req, res, url);
        case "/files/compose":
          allowMethods(res, method, path, ["POST"]);
          return postCompose(context, req, res);
        case "/envs":
          allowMethods(res, method, path, ["GET"]);
          return sendJson(res, 200, Object.fromEntries(context.state.envVars));
        case "/metrics":
          allowMethods(res, method, path, ["GET"]);
          return sendJson(res, 200, await metrics());
        default:
          throw new BurrowError(Code.NotFound, `path '${path}' not found`);
      }
    },
    close() {
      shutdown.abort();
      watchers.closeAll();
    },
  };
}
