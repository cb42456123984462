// Proxy for HTTP upgrades (WebSocket and friends): forward the handshake, then splice the two sockets. The answer
// is written to the client's raw socket by hand, so only a head that passed checkUpstreamHead is ever written.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { guarded } from "./guarded.js";
import { rawResponseHead } from "./headers.js";
import { CONNECT_TIMEOUT_MS, type ProxyFailure, type ProxyFault, type Upstream } from "./proxy-http.js";
import { sendRawAnswer } from "./responses.js";
import type { GatewayAnswer } from "./retry-answer.js";
import { checkUpstreamHead, isParseError } from "./upstream-response.js";
import { CONNECT_TIMEOUT_CODE, upstreamFailure, type UpstreamFailure } from "./upstream-failure.js";

export interface ProxyUpgradeOptions {
  target: Upstream;
  track: (...items: { destroy(): unknown }[]) => () => void;
  /** The gateway's own answer for each kind of failure (called once, when the gateway must answer). */
  answerFor: (failure: ProxyFailure) => GatewayAnswer;
  /** Told about refused answers and listener exceptions (the gateway logs them). Must not throw. */
  onFault: (fault: ProxyFault) => void;
  /** Told about a failed attempt to reach the sandbox (upgrades are never retried). Must not throw. */
  onUpstreamFailure: (failure: UpstreamFailure, retried: boolean) => void;
  /** @default CONNECT_TIMEOUT_MS */
  connectTimeoutMs?: number;
  /** The sandbox port serves HTTPS (httpsPorts): TLS, its certificate not verified. */
  tls?: boolean | undefined;
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
  const upstream = (opts.tls ? httpsRequest : httpRequest)({
    host: opts.target.host,
    port: opts.target.port,
    method: req.method,
    path: req.url,
    headers: req.headers,
    agent: false,
    ...(opts.tls ? { rejectUnauthorized: false } : {}),
  });
  let release = opts.track(socket, upstream);
  // What the client has been sent so far: nothing yet, the sandbox's answer, or the gateway's own 502.
  let state: "waiting" | "relayed" | "answered" = "waiting";

  const fail = (failure: ProxyFailure) => {
    release();
    upstream.destroy();
    if (state === "waiting") {
      state = "answered";
      sendRawAnswer(socket, opts.answerFor(failure));
    } else {
      socket.destroy();
    }
  };
  const refuse = (cause: string) => {
    opts.onFault({ kind: "invalid_response", cause });
    fail({ kind: "invalid_response" });
  };
  const guard = <A extends unknown[]>(listener: (...args: A) => void) =>
    guarded(
      listener,
      (err) => {
        opts.onFault({ kind: "internal", cause: "exception in an upgrade listener", err });
        fail({ kind: "internal" });
      },
      () => socket.destroy(),
    );

  // Until the sandbox completes the handshake the server's idle timeout applies (Node stops watching a socket once
  // it is handed over as an upgrade); a socket nobody listens on for 'timeout' would otherwise stay forever.
  const onHandshakeIdle = guard(() => socket.destroy());
  socket.on("timeout", onHandshakeIdle);
  socket.on(
    "close",
    guard(() => {
      release();
      upstream.destroy();
    }),
  );

  upstream.on(
    "upgrade",
    guard((upstreamRes: IncomingMessage, upstreamSocket: Duplex, upstreamHead: Buffer) => {
      upstreamSocket.on("error", guard(() => socket.destroy()));
      const checked = checkUpstreamHead(upstreamRes, "switching");
      if (!checked.ok || socket.destroyed) {
        upstreamSocket.destroy();
        if (!checked.ok) refuse(checked.cause);
        return;
      }
      release();
      release = opts.track(socket, upstreamSocket);
      upstreamSocket.on("close", guard(() => socket.destroy()));
      socket.on("close", guard(() => upstreamSocket.destroy()));
      // A WebSocket lives as long as both ends keep it open; idle ones are the application's business.
      socket.off("timeout", onHandshakeIdle);
      (socket as Duplex & { setTimeout?: (ms: number) => unknown }).setTimeout?.(0);
      state = "relayed";
      // latin1: the head holds the sandbox's bytes as Node parsed them (one char per byte); UTF-8 would re-encode
      // those above 0x7f.
      socket.write(rawResponseHead(checked.statusCode, checked.statusMessage, checked.rawHeaders), "latin1");
      if (upstreamHead.length) socket.write(upstreamHead);
      if (head.length) upstreamSocket.write(head);
      upstreamSocket.pipe(socket);
      socket.pipe(upstreamSocket);
    }),
  );

  upstream.on(
    "response",
    guard((upstreamRes: IncomingMessage) => {
      // The upstream declined to upgrade: relay its answer and close.
      upstreamRes.on(
        "error",
        guard(() => {
          if (state === "relayed") socket.destroy();
        }),
      );
      const checked = checkUpstreamHead(upstreamRes, "final");
      if (!checked.ok) {
        refuse(checked.cause);
        return;
      }
      state = "relayed";
      socket.write(rawResponseHead(checked.statusCode, checked.statusMessage, withoutFraming(checked.rawHeaders)), "latin1");
      upstreamRes.pipe(socket);
    }),
  );

  // Connecting is given up after a while, as for plain requests (see CONNECT_TIMEOUT_MS).
  let connected = false;
  let connectTimer: NodeJS.Timeout | undefined;
  const connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  upstream.on(
    "socket",
    guard((assigned: Socket) => {
      if (!assigned.connecting) {
        connected = true;
        return;
      }
      connectTimer = setTimeout(() => {
        upstream.destroy(Object.assign(new Error(`no connection within ${connectTimeoutMs} ms`), { code: CONNECT_TIMEOUT_CODE }));
      }, connectTimeoutMs);
      assigned.once("connect", () => {
        connected = true;
        clearTimeout(connectTimer);
      });
    }),
  );
  upstream.on("close", () => clearTimeout(connectTimer));

  upstream.on(
    "error",
    guard((err: Error) => {
      clearTimeout(connectTimer);
      if (state === "answered") return;
      if (state === "waiting" && isParseError(err)) {
        refuse(`${err.code}: ${err.message}`);
        return;
      }
      const failure = upstreamFailure(err, { reused: false, connected, answered: state !== "waiting" });
      if (!socket.destroyed) opts.onUpstreamFailure(failure, false);
      fail({ kind: "upstream", failure });
    }),
  );
  upstream.end();
}
