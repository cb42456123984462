// HTTPS and plain HTTP on one port: the first byte a client sends tells them apart (a TLS connection opens with a
// handshake record, 0x16; an HTTP request line starts with a letter of its method). TLS connections are decrypted
// by a node:tls socket and handed, decrypted, to the same HTTP server, so the API, the gateway, upgrades and
// timeouts treat both alike; `admit` (the per-client connection cap) sees every connection as it is accepted.
//
// The HTTP server is given its connections by its own 'connection' event, which net.Server emits for every socket
// it accepts; the hook wraps that one event. (Libraries that serve both on one port, such as httpolyglot, bring
// their own server object, whereas fastify and the gateway need the node:http server they were given.)
import type { Server } from "node:http";
import type { Socket } from "node:net";
import { createSecureContext, TLSSocket, type SecureContext } from "node:tls";

/** The content type of a TLS record that carries a handshake message: every TLS connection starts with one. */
const TLS_HANDSHAKE_RECORD = 0x16;
/** HTTP/1.1 only: the gateway proxies HTTP/1.1; a client that offers h2 falls back to it. */
const ALPN_PROTOCOLS = ["http/1.1"];

export interface SamePortTlsOptions {
  /** PEM private key and certificate of the server. */
  readonly key: string;
  readonly cert: string;
  /**
   * A client must send its first byte, and over TLS complete its handshake, within this time; after that the
   * HTTP server's own timeouts apply.
   */
  readonly handshakeTimeoutMs: number;
  /**
   * Called for every accepted connection before anything is read from it (where a server's 'connection' listener
   * would be, which now sees connections only once they are handed over); false: refused, the callback has dealt
   * with the socket. The accepted socket closes when the connection ends, TLS or not.
   */
  readonly admit?: ((socket: Socket) => boolean) | undefined;
  /** Failed handshakes (an untrusted certificate, a scanner); meant for debug logging. */
  readonly onClientError?: ((err: Error, remoteAddress: string | undefined) => void) | undefined;
}

export interface SamePortTls {
  /** Use another certificate for new connections (e.g. a renewed one). */
  setCertificate(key: string, cert: string): void;
}

/** Make `server` accept TLS as well as plain HTTP on the port(s) it listens on. Call before it listens. */
export function acceptTlsOnSamePort(server: Server, options: SamePortTlsOptions): SamePortTls {
  let secureContext: SecureContext = createSecureContext({ key: options.key, cert: options.cert });
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: unknown[]) => boolean;
  /** Accepted sockets not yet given to the HTTP server (first byte or handshake pending), with their deadline. */
  const pending = new Map<Socket, NodeJS.Timeout>();
  const settle = (socket: Socket) => {
    clearTimeout(pending.get(socket));
    pending.delete(socket);
  };

  // The TLS socket is made here rather than by a tls.Server, so that it is known (and closable) during its
  // handshake; 'secure' is the event a tls.Server itself waits for before it emits 'secureConnection'.
  const startTls = (socket: Socket) => {
    const tlsSocket = new TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: ALPN_PROTOCOLS });
    pending.set(tlsSocket, setTimeout(() => tlsSocket.destroy(), options.handshakeTimeoutMs));
    const onHandshakeError = (err: Error) => {
      options.onClientError?.(err, tlsSocket.remoteAddress);
      tlsSocket.destroy();
    };
    tlsSocket.on("error", onHandshakeError);
    // A client that gives up on the handshake (e.g. it does not trust the certificate) may just close its side.
    tlsSocket.once("end", () => pending.has(tlsSocket) && tlsSocket.destroy());
    tlsSocket.once("close", () => settle(tlsSocket));
    tlsSocket.once("secure", () => {
      if (!pending.has(tlsSocket)) return; // timed out meanwhile
      settle(tlsSocket);
      tlsSocket.off("error", onHandshakeError);
      emit("connection", tlsSocket);
    });
  };

  const sniff = (socket: Socket) => {
    pending.set(socket, setTimeout(() => socket.destroy(), options.handshakeTimeoutMs));
    const onError = () => socket.destroy();
    // The HTTP server's sockets allow half-open connections, so a client that leaves before its first byte would
    // otherwise keep its socket (and its place under the per-client cap) until the handshake timeout.
    const onEnd = () => socket.destroy();
    const stop = () => {
      settle(socket);
      socket.off("readable", onReadable);
      socket.off("close", stop);
      socket.off("error", onError);
      socket.off("end", onEnd);
    };
    const onReadable = () => {
      const chunk = socket.read() as Buffer | null;
      if (chunk === null) return;
      stop();
      // Either reader takes what was already received before it reads from the socket again.
      socket.unshift(chunk);
      if (chunk[0] === TLS_HANDSHAKE_RECORD) startTls(socket);
      else emit("connection", socket);
    };
    socket.on("readable", onReadable);
    socket.on("close", stop);
    socket.on("error", onError);
    socket.on("end", onEnd);
  };

  server.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== "connection") return emit(event, ...args);
    const socket = args[0] as Socket;
    if (options.admit?.(socket) !== false) sniff(socket);
    return true;
  } as Server["emit"];

  // http.Server.close() closes idle connections; sockets still on their first byte or handshake are idle too, and
  // would otherwise keep close() waiting until they time out.
  const dropPending = () => {
    for (const socket of [...pending.keys()]) {
      settle(socket);
      socket.destroy();
    }
  };
  const closeIdleConnections = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => {
    closeIdleConnections();
    dropPending();
  };
  const closeAllConnections = server.closeAllConnections.bind(server);
  server.closeAllConnections = () => {
    closeAllConnections();
    dropPending();
  };

  return {
    setCertificate(key, cert) {
      secureContext = createSecureContext({ key, cert });
    },
  };
}
