// Streaming HTTP proxy: bytes flow as they arrive in both directions (Connect server streams, file uploads and
// downloads of any size), with nothing buffered beyond what backpressure holds.
import { request as httpRequest, type Agent, type IncomingMessage, type ServerResponse } from "node:http";
import { endToEndHeaders } from "./headers.js";
import { sendJson } from "./responses.js";
import { appendFileSync } from "node:fs";
let seq = 0;
const L = (...a: unknown[]) => appendFileSync(`/tmp/gw-${process.pid}.log`, `${Date.now()} ${a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ")}\n`);

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
  const id = ++seq;
  let inBytes = 0;
  req.on("data", (c: Buffer) => { inBytes += c.length; });
  L(id, "req", req.method, req.url, req.headers["content-length"], req.headers["transfer-encoding"], req.headers["content-type"]);
  upstream.on("socket", (s) => { L(id, "socket reused=", upstream.reusedSocket, (s as any).localPort); s.on("close", (e: boolean) => L(id, "upsock close hadErr", e, (s as any)._lp)); });
  req.on("end", () => L(id, "req end in=", inBytes));
  req.on("close", () => L(id, "req close complete=", req.complete, "in=", inBytes));

  upstream.on("response", (upstreamRes: IncomingMessage) => {
    L(id, "resp", upstreamRes.statusCode, upstreamRes.headers, "in so far", inBytes, "req.complete", req.complete);
    upstreamRes.on("end", () => L(id, "resp end"));
    res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, endToEndHeaders(upstreamRes.headers));
    // Stream responses (Connect) must reach the client before the first message does.
    res.flushHeaders();
    upstreamRes.pipe(res);
    // An upstream that dies mid-body must drop the client connection too: ending cleanly would look complete.
    upstreamRes.on("error", () => res.destroy());
    upstreamRes.on("aborted", () => res.destroy());
  });
  upstream.on("error", (e) => {
    L(id, "upstream error", String(e), (e as any).code, "in=", inBytes, "headersSent", res.headersSent);
    release();
    if (!res.headersSent) sendJson(res, 502, opts.unreachableBody());
    else res.destroy();
  });

  req.on("error", () => upstream.destroy());
  res.on("close", () => {
    L(id, "res close finished=", res.writableFinished);
    release();
    // The client went away (or the exchange was torn down): stop the upstream side as well.
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}
