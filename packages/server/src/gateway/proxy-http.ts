// Streaming HTTP proxy: bytes flow as they arrive in both directions (Connect server streams, file uploads and
// downloads of any size), with nothing buffered beyond what backpressure holds. The sandbox on the other side is
// untrusted: its answer is checked before anything of it reaches the client, and no listener here may throw.
import { request as httpRequest, type Agent, type IncomingMessage, type ServerResponse } from "node:http";
import { guarded } from "./guarded.js";
import { endToEndHeaders } from "./headers.js";
import { sendJson } from "./responses.js";
import { checkUpstreamHead, isParseError } from "./upstream-response.js";

export interface Upstream {
  host: string;
  port: number;
}

/** Why the gateway answered 502 itself: nobody listening, an answer that is not HTTP, or a fault of its own. */
export type ProxyFailure = "unreachable" | "invalid_response" | "internal";

/** Something worth a log line: a refused answer from a sandbox or an exception on the proxy path. */
export interface ProxyFault {
  kind: Exclude<ProxyFailure, "unreachable">;
  cause: string;
  err?: unknown;
}

export interface ProxyHttpOptions {
  target: Upstream;
  agent: Agent;
  /** Register the exchange's sockets for kill-time teardown; returns the release function. */
  track: (...items: { destroy(): unknown }[]) => () => void;
  /** Body of the gateway's own 502 answer for each kind of failure. */
  failureBody: (failure: ProxyFailure) => string;
  /** Told about refused answers and listener exceptions (the gateway logs them). Must not throw. */
  onFault: (fault: ProxyFault) => void;
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
  // Set once the gateway has answered on its own: the upstream's later errors (it is torn down right after) must
  // not destroy that answer on its way out.
  let answered = false;
  let upstreamResponse: IncomingMessage | undefined;

  const fail = (failure: ProxyFailure) => {
    answered = true;
    release();
    upstream.destroy();
    // Part of the sandbox's answer already went out: only dropping the connection tells the client it is incomplete.
    if (res.headersSent) abortResponse(res);
    else sendJson(res, 502, opts.failureBody(failure));
  };
  const guard = <A extends unknown[]>(listener: (...args: A) => void) =>
    guarded(
      listener,
      (err) => {
        opts.onFault({ kind: "internal", cause: "exception in a proxy listener", err });
        fail("internal");
      },
      () => res.destroy(),
    );

  upstream.on(
    "response",
    guard((upstreamRes: IncomingMessage) => {
      upstreamResponse = upstreamRes;
      // An upstream that dies mid-body must drop the client connection too: ending cleanly would look complete.
      // (Not once the gateway answered itself: tearing down a refused answer ends in these events too.)
      const dropClient = guard(() => {
        if (!answered) abortResponse(res);
      });
      upstreamRes.on("error", dropClient);
      upstreamRes.on("aborted", dropClient);
      const head = checkUpstreamHead(upstreamRes, "final");
      if (!head.ok) {
        opts.onFault({ kind: "invalid_response", cause: head.cause });
        fail("invalid_response");
        return;
      }
      res.writeHead(head.statusCode, head.statusMessage, endToEndHeaders(upstreamRes.headers));
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
  upstream.on(
    "error",
    guard((err: Error) => {
      // Bytes after a complete answer (a body after a 204, say) spoil only the upstream connection, which Node
      // discards; the answer itself stands.
      if (answered || upstreamResponse?.complete) return;
      if (isParseError(err)) {
        opts.onFault({ kind: "invalid_response", cause: `${err.code}: ${err.message}` });
        fail("invalid_response");
      } else {
        fail("unreachable");
      }
    }),
  );

  req.on("error", guard(() => upstream.destroy()));
  res.on(
    "close",
    guard(() => {
      release();
      // The client went away (or the exchange was torn down): stop the upstream side as well.
      if (!res.writableFinished) upstream.destroy();
    }),
  );
  req.pipe(upstream);
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
