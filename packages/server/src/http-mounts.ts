// Endpoints that other packages serve on the API's port under a path of their own (Burrow's MCP server at /mcp),
// wired in by the composition root. They sit behind the same API-key check as the REST API (X-API-Key or
// Authorization: Bearer) and answer failures of that check in E2B's error shape; what they do after it is theirs.
// A public mount (the dashboard's static files) skips the check: what it serves needs no key.
import type { IncomingMessage, ServerResponse } from "node:http";
import { apiKeyFromHeaders } from "./auth/credentials.js";

export interface HttpMountAuth {
  /** The API key the request presented, verified. */
  apiKey: string;
  /** This server's base URL (http://host:port), for mounts that call the REST API back. */
  serverUrl: string;
}

export interface KeyedHttpMount {
  /** The path it serves, e.g. "/mcp" (that path and everything below it). */
  readonly path: string;
  readonly public?: false;
  handle(req: IncomingMessage, res: ServerResponse, auth: HttpMountAuth): void;
}

/** Served without the API-key check: static files a browser loads before it can send a key (the dashboard). */
export interface PublicHttpMount {
  readonly path: string;
  readonly public: true;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

export type HttpMount = KeyedHttpMount | PublicHttpMount;

export interface MountDispatcher {
  /** Serves the request when a mount owns its path; false when none does (the REST API's then). */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
}

function owns(mount: HttpMount, url: string | undefined): boolean {
  const path = (url ?? "/").split("?")[0]!;
  return path === mount.path || path.startsWith(`${mount.path}/`);
}

export function createMountDispatcher(
  mounts: readonly HttpMount[],
  opts: { verifyApiKey: (key: string) => boolean; serverUrl: () => string },
): MountDispatcher {
  return {
    handle(req, res) {
      const mount = mounts.find((m) => owns(m, req.url));
      if (!mount) return false;
      if (mount.public) {
        mount.handle(req, res);
        return true;
      }
      const key = apiKeyFromHeaders(req.headers);
      const refuse = (message: string) => {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ code: 401, message }));
      };
      if (!key) refuse("missing API key: send it in the X-API-Key header or as Authorization: Bearer <key>");
      else if (!opts.verifyApiKey(key)) refuse("invalid API key");
      else mount.handle(req, res, { apiKey: key, serverUrl: opts.serverUrl() });
      return true;
    },
  };
}
