// Serves the dashboard's built files (dist/ui) under a path prefix on the server's own port. Client routes
// (/dashboard/sandboxes/…) get index.html so that a reload or a shared link opens the same page. Bundles carry a
// content hash in their name and are cached for a year; index.html is revalidated on every load so that a new
// build is picked up at once.
import { existsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import serveStatic from "serve-static";

/** Where build.mjs writes the browser bundle. */
export const DASHBOARD_UI_DIR = join(dirname(fileURLToPath(import.meta.url)), "ui");

export interface DashboardHandlerOptions {
  /** The path the handler is mounted at, without a trailing slash (default "/dashboard"). */
  prefix?: string;
  /** The built files (default: this package's dist/ui). */
  dir?: string;
}

const YEAR_SECONDS = 365 * 24 * 3600;

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ code: status, message }));
}

export function createDashboardHandler(opts: DashboardHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const prefix = opts.prefix ?? "/dashboard";
  const dir = opts.dir ?? DASHBOARD_UI_DIR;
  const files = serveStatic(dir, {
    index: false,
    redirect: false,
    fallthrough: true,
    setHeaders(res, path) {
      const immutable = path.startsWith(join(dir, "assets"));
      res.setHeader("cache-control", immutable ? `public, max-age=${YEAR_SECONDS}, immutable` : "no-cache");
      res.setHeader("x-content-type-options", "nosniff");
    },
  });
  const index = serveStatic(dir, { index: ["index.html"], redirect: false, fallthrough: true, setHeaders: (res) => res.setHeader("cache-control", "no-cache") });

  return (req, res) => {
    const [path = "/", query] = (req.url ?? "/").split("?", 2);
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      fail(res, 405, `method ${req.method} not allowed on the dashboard's files`);
      return;
    }
    // Relative asset URLs in index.html resolve against the directory, so the bare prefix is redirected.
    if (path === prefix) {
      res.writeHead(301, { location: `${prefix}/${query ? `?${query}` : ""}` }).end();
      return;
    }
    if (!existsSync(join(dir, "index.html"))) {
      fail(res, 503, "the dashboard is not built: run 'npm run build'");
      return;
    }
    const rest = path.slice(prefix.length) || "/";
    req.url = rest;
    files(req, res, () => {
      // Missing bundles are real 404s; anything else is a client route of the single-page app.
      if (rest.startsWith("/assets/")) {
        fail(res, 404, `no dashboard file ${rest}`);
        return;
      }
      req.url = "/";
      index(req, res, () => fail(res, 404, "the dashboard's index.html is missing"));
    });
  };
}
