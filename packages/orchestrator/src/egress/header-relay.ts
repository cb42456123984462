// Header transforms at egress: for a host the sandbox's network rules set headers for, the egress proxy does not
// splice bytes but speaks HTTP/1.1 with the sandbox (over TLS with a certificate of the interceptor's CA on 443) and
// re-originates every request to the address it judged, with the rule's headers set (replacing any the sandbox sent
// under those names). Upstream TLS is verified against the interceptor's CAs with the host's name. The values exist
// only here, on the way out; nothing of them is ever written back towards the sandbox.
// A request that takes the connection over (an Upgrade, e.g. a WebSocket handshake, or a CONNECT) goes to the host
// on a connection of its own with the rules' headers set like any other, its Connection/Upgrade headers kept; from
// then on the bytes are relayed both ways unchanged (the host's answer, 101 or not, included).
import { Agent as HttpAgent, createServer, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { Duplex, PassThrough } from "node:stream";
import { connect as tlsConnect, createSecureContext, TLSSocket } from "node:tls";

/** What the server hands the orchestrator so that the egress proxy can apply header transforms. */
export interface EgressInterceptor {
  /**
   * The headers (values resolved) a sandbox's requests to `host` on TCP `port` get, or undefined when its rules name
   * none for it there (then the connection is spliced untouched, TLS included). Asked once per connection. Throws
   * when a value cannot be resolved (a secret deleted since): the sandbox's requests then get a 502 without
   * reaching the host.
   */
  headersFor(sandboxId: string, host: string, port: number): Promise<Record<string, string> | undefined>;
  /** Key and certificate (PEM) for `host`, issued by the CA every sandbox trusts. */
  certificateFor(host: string): Promise<{ key: string; cert: string }>;
  /** The CAs (PEM) upstream servers' certificates are checked against. */
  readonly upstreamCa: readonly string[];
  /** The certificate (PEM) of the CA `certificateFor` issues with, which sandboxes are made to trust. */
  readonly sandboxCaPem: string;
}

export interface RelayTarget {
  sandboxId: string;
  host: string;
  ip: string;
  port: number;
  tls: boolean;
  /** A connection to ip:port through the sandbox's user's proxy; absent: the host is reached directly. */
  dial?: (() => Promise<Socket>) | undefined;
}

const HANDSHAKE_TIMEOUT_MS = 10_000;
/** Connection-level headers: each side of the relay has its own connection. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "upgrade"]);

/**
 * Relay `client` (whose first bytes, already read, are `first`) with header transforms. Resolves the byte counts
 * when the connection is over.
 */
export function relayWithHeaders(
  client: Socket,
  first: Buffer,
  target: RelayTarget,
  headers: Record<string, string> | Error,
  interceptor: EgressInterceptor,
): Promise<{ bytesOut: number; bytesIn: number }> {
  return new Promise((resolve) => {
    // The first bytes were consumed by the name reader; replay them ahead of the rest.
    const readable = new PassThrough();
    readable.write(first);
    client.pipe(readable);
    const inbound = Duplex.from({ readable, writable: client });
    inbound.on("error", () => client.destroy());
    client.resume();

    const agent = target.dial
      ? dialingAgent(target, interceptor)
      : target.tls
        ? new HttpsAgent({ keepAlive: true, maxSockets: 1, ca: [...interceptor.upstreamCa] })
        : new HttpAgent({ keepAlive: true, maxSockets: 1 });
    const server = createServer({ requestTimeout: 0 }, (req, res) => forward(req, res, target, headers, agent));
    const takeOver = (req: IncomingMessage, socket: Duplex, head: Buffer) => tunnel(req, socket, head, target, headers, interceptor);
    server.on("upgrade", takeOver);
    server.on("connect", takeOver);
    server.on("clientError", (_err, socket: Duplex) => socket.destroy());

    let done = false;
    client.once("close", () => {
      if (done) return;
      done = true;
      agent.destroy();
      server.close();
      resolve({ bytesOut: client.bytesRead, bytesIn: client.bytesWritten });
    });

    if (!target.tls) {
      server.emit("connection", inbound);
      return;
    }
    interceptor.certificateFor(target.host).then(
      ({ key, cert }) => {
        const tlsSocket = new TLSSocket(inbound as unknown as Socket, {
          isServer: true,
          secureContext: createSecureContext({ key, cert }),
          ALPNProtocols: ["http/1.1"],
        });
        const timer = setTimeout(() => client.destroy(), HANDSHAKE_TIMEOUT_MS);
        tlsSocket.on("error", () => client.destroy());
        tlsSocket.once("secure", () => {
          clearTimeout(timer);
          server.emit("connection", tlsSocket);
        });
        tlsSocket.once("close", () => {
          clearTimeout(timer);
          client.destroy();
        });
      },
      () => client.destroy(),
    );
  });
}

function forward(req: IncomingMessage, res: ServerResponse, target: RelayTarget, headers: Record<string, string> | Error, agent: HttpAgent): void {
  if (headers instanceof Error) {
    reply(res, 502, `Burrow: the header rules for ${target.host} cannot be applied (${headers.message})\n`);
    return;
  }
  // The connection was judged by its first request's host; a later request naming another host would get this
  // host's headers, or reach an address its own name was never judged for.
  const host = (req.headers.host ?? "").toLowerCase().replace(/:\d+$/, "");
  if (host !== target.host) {
    reply(res, 421, `Burrow: this connection is for ${target.host}, not ${host || "(no Host)"}\n`);
    return;
  }
  const outgoing = outgoingHeaders(req.rawHeaders, headers);
  const options = {
    host: target.ip,
    port: target.port,
    method: req.method,
    path: req.url,
    headers: outgoing,
    setHost: false,
    agent,
    ...(target.tls && !target.dial ? { servername: target.host } : {}),
  };
  // Through a user's proxy the agent hands over sockets with TLS already on them.
  const upstream = (target.tls && !target.dial ? httpsRequest : httpRequest)(options, (up) => {
    const back: string[] = [];
    for (let i = 0; i + 1 < up.rawHeaders.length; i += 2) {
      if (!HOP_BY_HOP.has(up.rawHeaders[i]!.toLowerCase())) back.push(up.rawHeaders[i]!, up.rawHeaders[i + 1]!);
    }
    res.writeHead(up.statusCode ?? 502, up.statusMessage, back);
    up.pipe(res);
    up.on("error", () => res.destroy());
  });
  upstream.on("error", (err) => {
    if (!res.headersSent) reply(res, 502, `Burrow: ${target.host} could not be reached (${err.message})\n`);
    else res.destroy();
  });
  req.pipe(upstream);
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
}

/** The sandbox's headers as sent (names as written), without hop-by-hop ones and those the rules set, then the rules'. */
function outgoingHeaders(raw: readonly string[], set: Record<string, string>): OutgoingHttpHeaders {
  return headerPairs(raw, set, HOP_BY_HOP).flat() as unknown as OutgoingHttpHeaders;
}

function headerPairs(raw: readonly string[], set: Record<string, string>, drop: ReadonlySet<string>): [string, string][] {
  const replaced = new Set(Object.keys(set).map((n) => n.toLowerCase()));
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (!drop.has(lower) && !replaced.has(lower)) out.push([name, raw[i + 1]!]);
  }
  for (const [name, value] of Object.entries(set)) out.push([name, value]);
  return out;
}

/** Not passed on a connection that is taken over: they describe the sandbox's side of the proxy. */
const TUNNEL_DROPPED = new Set(["proxy-connection", "keep-alive"]);

/**
 * An Upgrade or CONNECT request: its head, with the rules' headers, to the host on a connection of its own, then the
 * bytes both ways as they are. Refusals (no rules' values, another Host, the host unreachable) are answered on the
 * socket and end it.
 */
function tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, target: RelayTarget, headers: Record<string, string> | Error, interceptor: EgressInterceptor): void {
  socket.on("error", () => socket.destroy());
  const refuse = (status: string, body: string) => {
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  };
  if (headers instanceof Error) {
    refuse("502 Bad Gateway", `Burrow: the header rules for ${target.host} cannot be applied (${headers.message})\n`);
    return;
  }
  const host = (req.headers.host ?? "").toLowerCase().replace(/:\d+$/, "");
  if (host !== target.host) {
    refuse("421 Misdirected Request", `Burrow: this connection is for ${target.host}, not ${host || "(no Host)"}\n`);
    return;
  }
  const lines = [`${req.method} ${req.url} HTTP/1.1`, ...headerPairs(req.rawHeaders, headers, TUNNEL_DROPPED).map(([n, v]) => `${n}: ${v}`)];
  let gone = false;
  socket.on("close", () => (gone = true));
  openUpstream(target, interceptor).then(
    (upstream) => {
      if (gone) {
        upstream.destroy();
        return;
      }
      upstream.on("error", () => socket.destroy());
      // An orderly end was passed on by the pipe (socket.end); anything else ends the sandbox's side too.
      upstream.on("close", () => !socket.writableEnded && socket.destroy());
      socket.on("close", () => upstream.destroy());
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    },
    (err: Error) => refuse("502 Bad Gateway", `Burrow: ${target.host} could not be reached (${err.message})\n`),
  );
}

/**
 * A connection to the target, directly or through the sandbox's user's proxy, with verified TLS on it for a TLS
 * target; resolves once it is ready (connected, handshake done), rejects after HANDSHAKE_TIMEOUT_MS.
 */
function openUpstream(target: RelayTarget, interceptor: EgressInterceptor): Promise<Socket> {
  const raw = target.dial ? target.dial() : Promise.resolve(netConnect({ host: target.ip, port: target.port }));
  return raw.then(
    (socket) =>
      new Promise<Socket>((resolve, reject) => {
        const ready = target.tls
          ? tlsConnect({ socket, servername: target.host, ca: [...interceptor.upstreamCa], ALPNProtocols: ["http/1.1"] })
          : socket;
        // A user's proxy hands its socket over paused (bytes that came with its handshake unread in it): TLS reads it
        // from now on; a plain one is resumed by whoever reads it (a pipe, or the agent below).
        if (target.tls) socket.resume();
        const timer = setTimeout(() => ready.destroy(new Error("connect timeout")), HANDSHAKE_TIMEOUT_MS);
        const fail = (err: Error) => {
          clearTimeout(timer);
          ready.destroy();
          socket.destroy();
          reject(err);
        };
        ready.once("error", fail);
        const done = () => {
          clearTimeout(timer);
          ready.off("error", fail);
          resolve(ready);
        };
        if (target.tls) ready.once("secureConnect", done);
        else if ((socket as Socket).connecting) socket.once("connect", done);
        else done();
      }),
  );
}

/** An agent whose connections are made by openUpstream (through the sandbox's user's proxy, TLS on top). */
function dialingAgent(target: RelayTarget, interceptor: EgressInterceptor): HttpAgent {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  // Node's agents take a connection given later through the callback when createConnection returns nothing.
  agent.createConnection = ((_options: unknown, callback: (err: Error | null, socket?: Duplex) => void) => {
    openUpstream(target, interceptor).then(
      (socket) => {
        callback(null, socket);
        // The request has its reader on the socket by now (attached on the next tick); a paused one must flow.
        setImmediate(() => socket.resume());
      },
      (err: Error) => callback(err),
    );
    return undefined;
  }) as unknown as HttpAgent["createConnection"];
  return agent;
}

function reply(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "Content-Type": "text/plain", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/**
 * Relay with header transforms when the interceptor has rules for the target's host; false (and nothing read or
 * written) when it has none, so that the caller splices. `onDone` gets the byte counts when a relay ends.
 */
export async function relayIfTransformed(
  interceptor: EgressInterceptor | undefined,
  client: Socket,
  first: Buffer,
  target: RelayTarget,
  onDone: (bytes: { bytesOut: number; bytesIn: number }) => void,
): Promise<boolean> {
  if (!interceptor) return false;
  let headers: Record<string, string> | Error | undefined;
  try {
    headers = await interceptor.headersFor(target.sandboxId, target.host, target.port);
  } catch (err) {
    headers = err instanceof Error ? err : new Error(String(err));
  }
  if (headers === undefined) return false;
  void relayWithHeaders(client, first, target, headers, interceptor).then(onDone);
  return true;
}
