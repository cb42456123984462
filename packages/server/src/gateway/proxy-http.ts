// Streaming HTTP proxy: bytes flow as they arrive in both directions (Connect server streams, file uploads and
// downloads of any size), with nothing buffered beyond what backpressure holds and a small request body kept for a
// retry. The sandbox on the other side is untrusted: its answer is checked before anything of it reaches the client,
// and no listener here may throw.
import { request as httpRequest, type Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { guarded } from "./guarded.js";
import { endToEndRawHeaders } from "./headers.js";
import { ReplayableBody } from "./replayable-body.js";
import { sendAnswer } from "./responses.js";
import type { GatewayAnswer } from "./retry-answer.js";
import { checkUpstreamHead, isParseError } from "./upstream-response.js";
import { CONNECT_TIMEOUT_CODE, upstreamFailure, worthRetrying, type UpstreamFailure } from "./upstream-failure.js";

export interface Upstream {
  host: string;
  port: number;
}

/**
 * Why the gateway answered itself: the sandbox could not be reached or broke off before answering (`upstream`), it
 * answered with something that is not HTTP (`invalid_response`), or the gateway failed (`internal`).
 */
export type ProxyFailure = { kind: "upstream"; failure: UpstreamFailure } | { kind: "invalid_response" } | { kind: "internal" };

/** Something worth a log line: a refused answer from a sandbox or an exception on the proxy path. */
export interface ProxyFault {
  kind: "invalid_response" | "internal";
  cause: string;
  err?: unknown;
}

/**
 * A connection to a sandbox that is not established within this long is given up. Connecting to a sandbox is a
 * local operation of the kernel (a veth into its namespace), done in microseconds even when envd is busy; this only
 * ends waits on a sandbox whose network stopped answering (each SYN the kernel retransmits doubles the wait).
 */
export const CONNECT_TIMEOUT_MS = 15_000;

export interface ProxyHttpOptions {
  target: Upstream;
  /** The sandbox's keep-alive agent; a retry goes out on a connection of its own. */
  agent: Agent;
  /** Register the exchange's sockets for kill-time teardown; returns the release function. */
  track: (...items: { destroy(): unknown }[]) => () => void;
  /** The gateway's own answer for each kind of failure (called once, when the gateway must answer). */
  answerFor: (failure: ProxyFailure) => GatewayAnswer;
  /** Told about refused answers and listener exceptions (the gateway logs them). Must not throw. */
  onFault: (fault: ProxyFault) => void;
  /** Told about every failed attempt to reach the sandbox, and whether it was retried. Must not throw. */
  onUpstreamFailure: (failure: UpstreamFailure, retried: boolean) => void;
  /** @default CONNECT_TIMEOUT_MS */
  connectTimeoutMs?: number;
  /** Host header sent upstream instead of the client's (a sandbox's maskRequestHost). */
  host?: string | undefined;
  /** The sandbox port serves HTTPS (httpsPorts): TLS, its certificate not verified; `agent` must be an HTTPS one. */
  tls?: boolean | undefined;
}

export function proxyHttp(req: IncomingMessage, res: ServerResponse, opts: ProxyHttpOptions): void {
  const body = new ReplayableBody(req);
  const connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  let upstream: ClientRequest;
  let release = () => {};
  // Set once the gateway has answered on its own: the upstream's later errors (it is torn down right after) must
  // not destroy that answer on its way out.
  let answered = false;
  let clientGone = false;
  let upstreamResponse: IncomingMessage | undefined;
  let attempts = 0;

  const fail = (failure: ProxyFailure) => {
    if (answered) return;
    answered = true;
    release();
    upstream.destroy();
    // Part of the sandbox's answer already went out: only dropping the connection tells the client it is incomplete.
    if (res.headersSent) abortResponse(res);
    else if (!clientGone) sendAnswer(res, opts.answerFor(failure));
  };
  const guard = <A extends unknown[]>(listener: (...args: A) => void) =>
    guarded(
      listener,
      (err) => {
        opts.onFault({ kind: "internal", cause: "exception in a proxy listener", err });
        fail({ kind: "internal" });
      },
      () => res.destroy(),
    );

  const attempt = (fresh: boolean) => {
    attempts++;
    const current = (opts.tls ? httpsRequest : httpRequest)({
      ...(opts.tls ? { rejectUnauthorized: false } : {}),
      host: opts.target.host,
      port: opts.target.port,
      method: req.method,
      path: req.url,
      // Names as the client wrote them (Node's `headers` object is lower-cased).
      headers: endToEndRawHeaders(req.rawHeaders, { host: opts.host }),
      // A retry must not draw another idle connection from the pool: it may have been closed just the same.
      agent: fresh ? false : opts.agent,
    });
    upstream = current;
    release();
    release = opts.track(req.socket, current);
    // What the connection had done when it failed: decides whether a retry is safe.
    let socket: Socket | undefined;
    let bytesReadBefore = 0;
    let connected = false;
    let connectTimer: NodeJS.Timeout | undefined;
    // The sandbox's answer broke off midway (logged once, however many events report it).
    let broken = false;
    const stopConnectTimer = () => clearTimeout(connectTimer);

    current.on(
      "socket",
      guard((assigned: Socket) => {
        socket = assigned;
        bytesReadBefore = assigned.bytesRead;
        if (!assigned.connecting) {
          connected = true;
          return;
        }
        connectTimer = setTimeout(() => {
          const err = Object.assign(new Error(`no connection within ${connectTimeoutMs} ms`), { code: CONNECT_TIMEOUT_CODE });
          current.destroy(err);
        }, connectTimeoutMs);
        assigned.once("connect", () => {
          connected = true;
          stopConnectTimer();
        });
      }),
    );

    current.on("close", stopConnectTimer);
    current.on(
      "response",
      guard((upstreamRes: IncomingMessage) => {
        stopConnectTimer();
        body.forget();
        upstreamResponse = upstreamRes;
        // An upstream that dies mid-body must drop the client connection too: ending cleanly would look complete.
        // (Not once the gateway answered itself: tearing down a refused answer ends in these events too.)
        const dropClient = guard((err?: Error) => {
          if (answered || broken) return;
          broken = true;
          if (!clientGone) {
            const cause = err ?? Object.assign(new Error("the sandbox closed the connection mid-answer"), { code: "ECONNRESET" });
            opts.onUpstreamFailure(upstreamFailure(cause, { reused: current.reusedSocket, connected: true, answered: true }), false);
          }
          abortResponse(res);
        });
        upstreamRes.on("error", dropClient);
        upstreamRes.on("aborted", () => dropClient());
        const head = checkUpstreamHead(upstreamRes, "final");
        if (!head.ok) {
          opts.onFault({ kind: "invalid_response", cause: head.cause });
          fail({ kind: "invalid_response" });
          return;
        }
        res.writeHead(head.statusCode, head.statusMessage, endToEndRawHeaders(upstreamRes.rawHeaders));
        // The sandbox is answering: the exchange lasts as long as it keeps the stream open (Connect streams carry
        // their own keepalives), so the server's idle timeout no longer applies to this socket. Node destroys an
        // idle socket only when nobody listens for 'timeout' on the response.
        res.on("timeout", keepStreaming);
        // Stream responses (Connect) must reach the client before the first message does. Not flushHeaders(): it
        // writes the head as UTF-8, which would re-encode header bytes above 0x7f; an empty Buffer sends it as is.
        res.write(EMPTY);
        upstreamRes.pipe(res);
      }),
    );

    current.on(
      "error",
      guard((err: Error) => {
        stopConnectTimer();
        // A superseded attempt, a client that left, or bytes after a complete answer (a body after a 204, say):
        // these spoil only an upstream connection, which Node discards; the answer itself stands.
        if (current !== upstream || answered || clientGone || upstreamResponse?.complete) return;
        if (upstreamResponse) {
          // The sandbox broke off mid-answer.
          if (broken) return;
          broken = true;
          const failure = upstreamFailure(err, { reused: current.reusedSocket, connected, answered: true });
          opts.onUpstreamFailure(failure, false);
          fail({ kind: "upstream", failure });
          return;
        }
        if (isParseError(err)) {
          opts.onFault({ kind: "invalid_response", cause: `${err.code}: ${err.message}` });
          fail({ kind: "invalid_response" });
          return;
        }
        const failure = upstreamFailure(err, {
          reused: current.reusedSocket,
          connected,
          answered: socket !== undefined && socket.bytesRead > bytesReadBefore,
        });
        const retry = attempts < 2 && body.replayable && worthRetrying(failure, req.method);
        opts.onUpstreamFailure(failure, retry);
        if (retry) attempt(true);
        else fail({ kind: "upstream", failure });
      }),
    );

    body.sendTo(current);
  };

  req.on("error", guard(() => upstream.destroy()));
  res.on(
    "close",
    guard(() => {
      release();
      // The client went away (or the exchange was torn down): stop the upstream side as well.
      if (!res.writableFinished) {
        clientGone = true;
        upstream.destroy();
      }
    }),
  );
  attempt(false);
}

const EMPTY = Buffer.alloc(0);

/**
 * Drop the client's connection mid-answer, after what was already written reaches it: Node corks the socket until
 * the end of the tick, and destroying it corked would discard the head too, leaving the client no answer at all.
 */
function abortResponse(res: ServerResponse): void {
  const socket = res.socket;
  while (socket?.writableCorked) socket.uncork();
  res.destroy();
}

function keepStreaming(): void {
  // Deliberately empty: its presence is what keeps Node from destroying the socket.
}
