// Streaming HTTP proxy: bytes flow as they arrive in both directions (Connect server streams, file uploads and
// downloads of any size), with nothing buffered beyond what backpressure holds.
import { request as httpRequest, type Agent, type IncomingMessage, type ServerResponse } from "node:http";
import { endToEndHeaders } from "./headers.js";
import { sendJson } from "./responses.js";

export interface Upstream {
  host: string;
  port: number;
}

export interface ProxyHttpOptions {
  target: Upstream;
  agent: Agent;
  /** Register the exchange's sockets for kill-time teardown; returns the release function. */
  track: (...items: { destroy(): unknown }[]) => () => void;
  /** Body for a 502 when the upstream cannot be reached before any response. */
  unreachableBody: () => string;
}

export function proxyHttp(req: IncomingMessage, res: ServerResponse, opts: ProxyHttpOptions): void {
  const upstream = httpRequest({
    host: opts.target.host,
    port: opts.target.port,
    method: req.method,
    path: req.url,
    headers: endToEndHeaders(req.headers),
    agent: opts.agent,
  });
  const release = opts.track(req.socket, upstream);

  upstream.on("response", (upstreamRes: IncomingMessage) => {
    res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, endToEndHeaders(upstreamRes.headers));
    // Stream responses (Connect) must reach the client before the first message does.
    res.flushHeaders();
    upstreamRes.pipe(res);
    // An upstream that dies mid-body must drop the client connection too: ending cleanly would look complete.
    upstreamRes.on("error", () => res.destroy());
    upstreamRes.on("aborted", () => res.destroy());
  });
  upstream.on("error", () => {
    release();
    if (!res.headersSent) sendJson(res, 502, opts.unreachableBody());
    else res.destroy();
  });

  req.on("error", () => upstream.destroy());
  res.on("close", () => {
    release();
    // The client went away (or the exchange was torn down): stop the upstream side as well.
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}
