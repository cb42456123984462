// Proxy for HTTP upgrades (WebSocket and friends): forward the handshake, then splice the two sockets.
import { request as httpRequest, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { rawResponseHead } from "./headers.js";
import type { Upstream } from "./proxy-http.js";
import { sendRawJson } from "./responses.js";

export interface ProxyUpgradeOptions {
  target: Upstream;
  track: (...items: { destroy(): unknown }[]) => () => void;
  unreachableBody: () => string;
}

/** Raw headers minus framing, for a non-upgrade answer we relay close-delimited. */
function withoutFraming(rawHeaders: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name === "transfer-encoding" || name === "content-length" || name === "connection") continue;
    out.push(rawHeaders[i]!, rawHeaders[i + 1]!);
  }
  return [...out, "connection", "close"];
}

export function proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, opts: ProxyUpgradeOptions): void {
  // The handshake keeps its Connection/Upgrade headers: they are the point of the request.
  const upstream = httpRequest({
    host: opts.target.host,
    port: opts.target.port,
    method: req.method,
    path: req.url,
    headers: req.headers,
    agent: false,
  });
  let release = opts.track(socket, upstream);
  socket.on("close", () => {
    release();
    upstream.destroy();
  });

  upstream.on("upgrade", (upstreamRes: IncomingMessage, upstreamSocket: Duplex, upstreamHead: Buffer) => {
    release();
    release = opts.track(socket, upstreamSocket);
    upstreamSocket.on("error", () => socket.destroy());
    upstreamSocket.on("close", () => socket.destroy());
    socket.on("close", () => upstreamSocket.destroy());
    if (socket.destroyed) {
      upstreamSocket.destroy();
      return;
    }
    socket.write(rawResponseHead(upstreamRes.statusCode ?? 101, upstreamRes.statusMessage ?? "Switching Protocols", upstreamRes.rawHeaders));
    if (upstreamHead.length) socket.write(upstreamHead);
    if (head.length) upstreamSocket.write(head);
    upstreamSocket.pipe(socket);
    socket.pipe(upstreamSocket);
  });

  upstream.on("response", (upstreamRes: IncomingMessage) => {
    // The upstream declined to upgrade: relay its answer and close.
    socket.write(rawResponseHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage ?? "", withoutFraming(upstreamRes.rawHeaders)));
    upstreamRes.pipe(socket);
    upstreamRes.on("error", () => socket.destroy());
  });

  upstream.on("error", () => {
    release();
    sendRawJson(socket, 502, opts.unreachableBody());
  });
  upstream.end();
}
