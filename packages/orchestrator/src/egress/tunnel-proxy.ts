// The way out for a sandbox whose egress goes through its user's proxy (E2B's `network.egressProxy`): every TCP port
// of such a sandbox not taken by a name-judging listener (80/443 with domain rules) is DNAT'ed to one catch-all
// listener here. It finds where the connection was going (conntrack, original-destination.ts), judges that address
// with the sandbox's rules and the host's forbidden destinations like the firewall would, and connects through the
// user's proxy (upstream-proxy.ts) instead of directly. It fails closed: a proxy that is down, refuses the
// credentials or sits at a forbidden address means no connection, never a direct one. The user's proxy itself is
// held to the forbidden destinations (loopback, the host, link-local, the sandboxes' subnet, the operator's deny
// list): a sandbox must not reach through it what it could not reach itself.
import { createServer, isIPv4, type Server, type Socket } from "node:net";
import type { EgressAudit, EgressRecord } from "./egress-audit.js";
import { judgeAddress, type SandboxPolicy } from "./egress-policy.js";
import { createNativeRelay, type NativeRelay, type RelayKind } from "./native-relay.js";
import { originalDestination } from "./original-destination.js";
import { connectThroughProxy, type UpstreamProxy, UpstreamProxyError } from "./upstream-proxy.js";

export interface TunnelPolicy extends SandboxPolicy {
  sandboxId: string;
  /** The user's proxy; a sandbox without one is never DNAT'ed here, and is refused if it is. */
  upstream: UpstreamProxy | undefined;
}

export interface UserProxyDialer {
  resolve4: (name: string) => Promise<string[]>;
  forbidden: (ip: string) => string | undefined;
  connectTimeoutMs?: number;
}

export interface TunnelProxyOptions extends UserProxyDialer {
  gateway: string;
  policyOf: (ip: string) => TunnelPolicy | undefined;
  audit: EgressAudit;
  /** Where conntrack entries are read (tests); the kernel's by default. */
  conntrackFile?: string;
  /** Who moves the bytes, as in the egress proxy (its `relay`). @default "native" */
  relay?: RelayKind;
}

export interface TunnelProxy {
  readonly port: number;
  close(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 10_000;

export async function startTunnelProxy(opts: TunnelProxyOptions): Promise<TunnelProxy> {
  const open = new Set<Socket>();
  let port = 0;
  // Like the egress proxy's: the kernel relay from the first connection on, the JS relay without the addon.
  let kernel: NativeRelay | undefined | null;
  let closing = false;
  const relayer: Relayer = (client, upstream, done) => {
    if (client.destroyed) {
      upstream.destroy();
      done({ bytesOut: 0, bytesIn: 0 });
      return;
    }
    if ((opts.relay ?? "native") === "native" && !closing) {
      if (kernel === undefined) kernel = createNativeRelay() ?? null;
      if (kernel?.handOver(client, upstream, Buffer.alloc(0), done)) return;
    }
    relay(client, upstream, Buffer.alloc(0), done);
  };
  const server: Server = createServer((client) => {
    open.add(client);
    client.once("close", () => open.delete(client));
    client.on("error", () => undefined);
    client.pause();
    void handle(opts, port, client, relayer).catch(() => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, opts.gateway, () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as { port: number }).port;
  return {
    port,
    close: async () => {
      closing = true;
      kernel?.close();
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Relayer = (client: Socket, upstream: Socket, done: (bytes: Pick<EgressRecord, "bytesOut" | "bytesIn">) => void) => void;

async function handle(opts: TunnelProxyOptions, listenerPort: number, client: Socket, relayer: Relayer): Promise<void> {
  const source = (client.remoteAddress ?? "").replace(/^::ffff:/, "");
  const policy = opts.policyOf(source);
  const dest = await originalDestination({ ip: source, port: client.remotePort ?? 0 }, { ip: opts.gateway, port: listenerPort }, opts.conntrackFile);
  if (!policy || !dest) {
    client.destroy();
    return;
  }
  const base = { sandboxId: policy.sandboxId, via: "proxy" as const, ip: dest.ip, port: dest.port, bytesOut: 0, bytesIn: 0 };
  const refuse = (rule: string) => {
    opts.audit.add({ ...base, verdict: "denied", rule, atMs: Date.now() });
    client.destroy();
  };
  if (!policy.upstream) return refuse("no egress proxy");
  const why = opts.forbidden(dest.ip);
  if (why) return refuse(why);
  const verdict = judgeAddress(policy, dest.ip);
  if (!verdict.allowed) return refuse(verdict.rule);
  let upstream: Socket;
  try {
    upstream = await dialThroughUserProxy(opts, policy.upstream, dest.ip, dest.port);
  } catch (err) {
    return refuse(err instanceof UpstreamProxyError ? `egress proxy: ${err.message}` : "egress proxy failed");
  }
  relayer(client, upstream, (bytes) => opts.audit.add({ ...base, ...bytes, verdict: "allowed", rule: verdict.rule, atMs: Date.now() }));
}

/**
 * A connection to `ip:port` through the user's proxy, whose own address is resolved here (never a forbidden one,
 * see the file's comment). Rejects with an UpstreamProxyError.
 */
export async function dialThroughUserProxy(dialer: UserProxyDialer, proxy: UpstreamProxy, ip: string, port: number): Promise<Socket> {
  const addresses = isIPv4(proxy.host) ? [proxy.host] : await dialer.resolve4(proxy.host).catch(() => []);
  if (addresses.length === 0) throw new UpstreamProxyError("proxy_unreachable", `${proxy.host} does not resolve`);
  const proxyIp = addresses.find((a) => dialer.forbidden(a) === undefined);
  if (proxyIp === undefined) throw new UpstreamProxyError("proxy_refused", `${proxy.host} (${addresses[0]}) is not allowed as a proxy: ${dialer.forbidden(addresses[0]!)}`);
  return connectThroughProxy(proxy, proxyIp, ip, port, { timeoutMs: dialer.connectTimeoutMs ?? CONNECT_TIMEOUT_MS });
}

/**
 * Splice two connected sockets (after `first` to upstream) and report the bytes each way once both are closed, or
 * at the first error. A side that closes cleanly has passed its end on through the pipe; the other side closes once
 * what Node still holds for it is written (destroying it then would cut off a slow reader's last bytes).
 */
export function relay(client: Socket, upstream: Socket, first: Buffer, done: (bytes: Pick<EgressRecord, "bytesOut" | "bytesIn">) => void): void {
  let finished = false;
  let open = 2;
  // What the proxy's handshake wrote is not the sandbox's.
  const handshake = upstream.bytesWritten;
  const finish = () => {
    if (finished) return;
    finished = true;
    client.destroy();
    upstream.destroy();
    done({ bytesOut: upstream.bytesWritten - handshake, bytesIn: client.bytesWritten });
  };
  const closed = (hadError: boolean) => (hadError || --open === 0 ? finish() : undefined);
  upstream.on("error", finish);
  client.on("error", finish);
  upstream.once("close", closed);
  client.once("close", closed);
  client.setNoDelay(true);
  if (first.length > 0) upstream.write(first);
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
  upstream.resume();
}
