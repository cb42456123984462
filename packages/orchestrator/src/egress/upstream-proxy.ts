// A user's own egress proxy (E2B's `network.egressProxy`): where the egress proxy sends a sandbox's allowed
// connections instead of connecting directly. SOCKS5 (E2B's only kind; `host:port` without a scheme means it) with
// RFC 1929 user/password through the `socks` package, or HTTP CONNECT with Basic Proxy-Authorization. The proxy is
// given the destination the egress proxy already judged and resolved (an address, never a name the user's proxy
// could resolve elsewhere), so the rules hold whatever the user's proxy's resolver says.
import { connect as tcpConnect, isIPv4, type Socket } from "node:net";
import { SocksClient } from "socks";

export interface UpstreamProxy {
  protocol: "socks5" | "http";
  host: string;
  port: number;
  username?: string | undefined;
  password?: string | undefined;
}

/** Why the user's proxy could not connect: its stable code, then the reason in words. */
export class UpstreamProxyError extends Error {
  constructor(
    readonly code: "proxy_unreachable" | "proxy_auth_failed" | "proxy_refused" | "proxy_protocol",
    message: string,
  ) {
    super(message);
    this.name = "UpstreamProxyError";
  }
}

const MAX_CREDENTIAL_BYTES = 255;
const MAX_CONNECT_RESPONSE_BYTES = 16 * 1024;
const HOST = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * A proxy as the API takes it: `socks5://host:port`, `http://host:port` or E2B's bare `host:port` (SOCKS5), with
 * optional credentials of at most 255 bytes each (a password only with a username). Throws a RangeError whose
 * message names the bad value.
 */
export function parseUpstreamProxy(address: string, username?: string, password?: string): UpstreamProxy {
  const bad = (why: string) => new RangeError(`invalid network.egressProxy.address '${address}': ${why}`);
  const match = /^(?:([A-Za-z0-9+.-]+):\/\/)?([^/:@?#\s]+):(\d{1,5})\/?$/.exec(address.trim());
  if (!match) throw bad("expected socks5://host:port, http://host:port or host:port");
  const scheme = (match[1] ?? "socks5").toLowerCase();
  if (scheme !== "socks5" && scheme !== "http") throw bad(`scheme '${scheme}' is not socks5 or http`);
  const host = match[2]!;
  if (!isIPv4(host) && !HOST.test(host)) throw bad(`'${host}' is not an IPv4 address or a host name`);
  const port = Number(match[3]);
  if (port < 1 || port > 65535) throw bad(`port ${port} is not 1-65535`);
  for (const [field, value] of [["username", username], ["password", password]] as const) {
    if (value !== undefined && (value.length === 0 || Buffer.byteLength(value) > MAX_CREDENTIAL_BYTES)) {
      throw new RangeError(`invalid network.egressProxy.${field}: 1 to ${MAX_CREDENTIAL_BYTES} bytes`);
    }
  }
  if (password !== undefined && username === undefined) throw new RangeError("invalid network.egressProxy: a password needs a username");
  return { protocol: scheme, host, port, ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}

/**
 * A connection to `ip:port` through the proxy (whose own address, `proxyIp`, the caller resolved and checked),
 * ready for the client's bytes. Fails closed with an UpstreamProxyError: never a direct connection instead.
 */
export async function connectThroughProxy(
  proxy: UpstreamProxy,
  proxyIp: string,
  ip: string,
  port: number,
  opts: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<Socket> {
  opts.signal?.throwIfAborted();
  const socket = proxy.protocol === "socks5" ? await socks5(proxy, proxyIp, ip, port, opts.timeoutMs) : await httpConnect(proxy, proxyIp, ip, port, opts.timeoutMs);
  if (opts.signal?.aborted) {
    socket.destroy();
    opts.signal.throwIfAborted();
  }
  return socket;
}

async function socks5(proxy: UpstreamProxy, proxyIp: string, ip: string, port: number, timeoutMs: number): Promise<Socket> {
  try {
    const { socket } = await SocksClient.createConnection({
      command: "connect",
      proxy: { host: proxyIp, port: proxy.port, type: 5, ...(proxy.username !== undefined ? { userId: proxy.username, password: proxy.password ?? "" } : {}) },
      destination: { host: ip, port },
      timeout: timeoutMs,
      set_tcp_nodelay: true,
    });
    return await settled(socket);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/authentication/i.test(message)) throw new UpstreamProxyError("proxy_auth_failed", `SOCKS5 proxy ${proxy.host}:${proxy.port} refused the credentials`);
    if (/Socks5 proxy rejected connection/i.test(message)) throw new UpstreamProxyError("proxy_refused", `SOCKS5 proxy ${proxy.host}:${proxy.port} refused ${ip}:${port}: ${message}`);
    throw new UpstreamProxyError("proxy_unreachable", `SOCKS5 proxy ${proxy.host}:${proxy.port}: ${message}`);
  }
}

/**
 * The socks package hands the socket over before it is done with it: on the next turn (setImmediate) it emits the
 * bytes that came with its handshake as a 'data' event and resumes the socket. Collect those and hand the socket on
 * paused, with them unread in it, like the HTTP CONNECT path's; a relay that takes the descriptor instead of
 * listening (the kernel relay) would lose them otherwise.
 */
function settled(socket: Socket): Promise<Socket> {
  const early: Buffer[] = [];
  const collect = (chunk: Buffer) => early.push(chunk);
  socket.on("data", collect);
  return new Promise((resolve) =>
    setImmediate(() => {
      socket.pause();
      socket.off("data", collect);
      if (early.length > 0) socket.unshift(Buffer.concat(early));
      resolve(socket);
    }),
  );
}

function httpConnect(proxy: UpstreamProxy, proxyIp: string, ip: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = tcpConnect({ host: proxyIp, port: proxy.port, noDelay: true });
    let head = Buffer.alloc(0);
    const fail = (err: UpstreamProxyError) => {
      socket.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new UpstreamProxyError("proxy_unreachable", `HTTP proxy ${proxy.host}:${proxy.port}: no answer in ${timeoutMs} ms`)), timeoutMs);
    socket.once("error", (err) => {
      clearTimeout(timer);
      fail(new UpstreamProxyError("proxy_unreachable", `HTTP proxy ${proxy.host}:${proxy.port}: ${err.message}`));
    });
    socket.once("connect", () => {
      const auth = proxy.username !== undefined ? `Proxy-Authorization: Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ""}`).toString("base64")}\r\n` : "";
      socket.write(`CONNECT ${ip}:${port} HTTP/1.1\r\nHost: ${ip}:${port}\r\n${auth}\r\n`);
    });
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_CONNECT_RESPONSE_BYTES) fail(new UpstreamProxyError("proxy_protocol", `HTTP proxy ${proxy.host}:${proxy.port}: no end to its CONNECT response`));
        return;
      }
      clearTimeout(timer);
      socket.off("data", onData);
      socket.removeAllListeners("error");
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString("latin1"))?.[1];
      if (status === "200") {
        socket.pause();
        // Bytes the destination sent right after the proxy's answer belong to the client.
        if (head.length > end + 4) socket.unshift(head.subarray(end + 4));
        resolve(socket);
      } else if (status === "407") {
        fail(new UpstreamProxyError("proxy_auth_failed", `HTTP proxy ${proxy.host}:${proxy.port} refused the credentials (407)`));
      } else {
        fail(new UpstreamProxyError(status ? "proxy_refused" : "proxy_protocol", `HTTP proxy ${proxy.host}:${proxy.port} answered CONNECT ${ip}:${port} with ${status ?? "no HTTP status"}`));
      }
    };
    socket.on("data", onData);
  });
}
