// The transparent egress proxy: sandboxes with domain rules have their TCP 80 and 443 redirected (nft DNAT) to one
// listener per original port on the gateway, so the port is known without SO_ORIGINAL_DST and the sandbox by the
// connection's source address. The proxy reads the name the client asks for (TLS SNI on 443, HTTP Host on 80),
// judges it with the sandbox's rules, resolves it itself (so the connection goes where the name points, whatever
// address the sandbox chose: IP tricks, SNI/Host mismatches and DNS rebinding gain nothing), connects and splices
// bytes both ways; TLS is never terminated. Refused: 403 with a short text (HTTP) or a closed connection (TLS).
// Spliced connections (no header transform) are handed to the kernel relay (native-relay.ts) once connected, so
// their bytes do not pass through Node; the JS relay remains for when the addon is not built.
// One more listener takes any port (sandboxes' inspect chains send the ports their `host:port` header transforms
// name there): the original port comes from conntrack (original-destination.ts), and whether the client speaks TLS
// or HTTP from its first byte (a TLS handshake record starts with 22, an HTTP/1 request with a letter).
// Early upstream connect: when a connection to 80/443 was going (SO_ORIGINAL_DST) to an address Burrow's resolver
// gave this sandbox for a name its rules allow (resolved-addresses.ts), the upstream connection is opened at accept,
// in parallel with reading the name. Nothing is written on it before the verdict; it is used only when the judged
// name resolves to that same address (else closed, and the connection made as always), so it changes when the
// connection starts, never where bytes go. A short request then waits for one connect less.
// The first bytes are read in the accept callback when they are there already (the relay addon's readNow; Node would
// read them only in the event loop's next turn), so a loaded host judges the name one turn sooner.
import { createServer, isIPv4, type Server, Socket, type SocketConstructorOpts } from "node:net";
import type { EgressAudit, EgressRecord } from "./egress-audit.js";
import { createNativeRelay, socketOriginalDestination, socketReadNow, type NativeRelay, type RelayedBytes, type RelayKind, type RelayLogger } from "./native-relay.js";
import { relay } from "./tunnel-proxy.js";
import { judgeAddress, judgeHost, type EgressVerdict, type SandboxPolicy } from "./egress-policy.js";
import { MAX_PEEK_BYTES, peekHttpHost, peekTlsServerName, type Peek } from "./first-bytes.js";
import { relayIfTransformed, type EgressInterceptor } from "./header-relay.js";
import { originalDestination } from "./original-destination.js";
import type { ResolvedAddresses } from "./resolved-addresses.js";

export interface ProxyPolicy extends SandboxPolicy {
  sandboxId: string;
}

export interface EgressProxyOptions {
  gateway: string;
  /** Original ports redirected here: 443 is read as TLS, anything else as HTTP. */
  ports: readonly number[];
  policyOf: (ip: string) => ProxyPolicy | undefined;
  resolve4: (name: string) => Promise<string[]>;
  /** A connection through the sandbox's user's proxy (tunnel-proxy.ts), or undefined to connect directly. */
  dial?: (sandboxId: string, ip: string, port: number) => Promise<Socket> | undefined;
  /** Whether the sandbox's egress goes through its user's proxy (then `dial` is how header transforms connect too). */
  tunnels?: (sandboxId: string) => boolean;
  /** Why the proxy must never connect to an address (loopback, the host's own, the sandboxes' subnet …), or undefined. */
  forbidden: (ip: string) => string | undefined;
  audit: EgressAudit;
  /** Header transforms (header-relay.ts): hosts it has rules for are relayed with them instead of spliced. */
  interceptor?: () => EgressInterceptor | undefined;
  /**
   * Who moves a spliced connection's bytes: the kernel relay (falling back to JS when the addon did not load) or
   * Node streams. Fixed for the proxy's life (the orchestrator's config egressRelay). @default "native"
   */
  relay?: RelayKind;
  /** Where the fallback to the JS relay is said (once); a process warning without one. */
  logger?: RelayLogger;
  /** Also listen for connections to any other port (inspect chains), found in conntrack. @default false */
  anyPort?: boolean;
  /** Where conntrack entries are read (tests); the kernel's by default. */
  conntrackFile?: string;
  /**
   * What Burrow's resolver gave each sandbox: connections to such an address for an allowed name connect upstream
   * while the name is read (see the file's comment). Without it, upstream connects wait for the verdict.
   */
  resolved?: ResolvedAddresses;
}

export interface EgressProxy {
  /** Original port → the port of its listener on the gateway. */
  readonly listeners: ReadonlyMap<number, number>;
  /** The any-port listener's port (with `anyPort`). */
  readonly inspectPort: number | undefined;
  /** Connections the kernel relay carries now. */
  readonly relayed: number;
  /** Stop listening and close every connection, the kernel relay's included. */
  close(): Promise<void>;
}

const PEEK_TIMEOUT_MS = 10_000;
/** Socket buffers of 1 MiB: fewer pauses and resumes of a bulk transfer spliced in user space. */
const HIGH_WATER_MARK = 2 ** 20;
const CONNECT_TIMEOUT_MS = 10_000;
/**
 * An early upstream connection older than this when the verdict comes is not used: a server may have given up on a
 * connection that sent nothing (header timeouts), so a slow client gets a fresh one.
 */
const EARLY_MAX_AGE_MS = 1_000;

export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  const servers: Server[] = [];
  const listeners = new Map<number, number>();
  const open = new Set<Socket>();
  // Created with the first connection that is spliced: a server whose sandboxes never go through the proxy loads
  // nothing and starts no thread.
  let kernel: NativeRelay | undefined | null;
  let closing = false;
  const relayKind = opts.relay ?? "native";
  const relayer: Relayer = (client, upstream, first, done) => {
    // The sandbox gave up while the upstream connection was being made (through a user's proxy, say).
    if (client.destroyed) {
      upstream.destroy();
      done({ bytesOut: 0, bytesIn: 0 });
      return;
    }
    if (relayKind === "native" && !closing) {
      if (kernel === undefined) kernel = createNativeRelay(opts.logger) ?? null;
      if (kernel?.handOver(client, upstream, first, done)) return;
    }
    relay(client, upstream, first, done);
  };
  const listen = async (onConnection: (socket: Socket) => void): Promise<number> => {
    // Half-open: a client that shuts down its sending side still gets the answer.
    const server = createServer({ highWaterMark: HIGH_WATER_MARK, allowHalfOpen: true }, (socket) => {
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      onConnection(socket);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, opts.gateway, () => {
        server.off("error", reject);
        resolve();
      });
    });
    servers.push(server);
    return (server.address() as { port: number }).port;
  };
  let inspectPort: number | undefined;
  try {
    for (const port of opts.ports) listeners.set(port, await listen((socket) => handle(opts, port, port === 443 ? "tls" : "http", socket, relayer)));
    if (opts.anyPort) {
      const self = await listen((socket) => {
        socket.on("error", () => undefined);
        socket.pause();
        const client = { ip: (socket.remoteAddress ?? "").replace(/^::ffff:/, ""), port: socket.remotePort ?? 0 };
        originalDestination(client, { ip: opts.gateway, port: inspectPort! }, opts.conntrackFile).then(
          (dst) => {
            if (dst === undefined) socket.destroy();
            else {
              handle(opts, dst.port, "sniff", socket, relayer);
              socket.resume();
            }
          },
          () => socket.destroy(),
        );
      });
      inspectPort = self;
    }
  } catch (err) {
    for (const s of servers) s.close();
    throw err;
  }
  return {
    listeners,
    inspectPort,
    get relayed() {
      return kernel ? kernel.active : 0;
    },
    close: async () => {
      closing = true;
      kernel?.close();
      for (const s of open) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/** Relays two connected sockets, `first` going upstream first, and reports the bytes once it is over. */
type Relayer = (client: Socket, upstream: Socket, first: Buffer, done: (bytes: RelayedBytes) => void) => void;

/** How a listener reads a client's first bytes: as TLS, as HTTP, or as whichever its first byte says. */
type Speech = "tls" | "http" | "sniff";

/** A TLS record of type handshake (22) starts every TLS connection; an HTTP/1 request starts with a method's letter. */
const TLS_HANDSHAKE = 22;

function handle(opts: EgressProxyOptions, port: number, speech: Speech, client: Socket, relayer: Relayer): void {
  const source = (client.remoteAddress ?? "").replace(/^::ffff:/, "");
  const policy = opts.policyOf(source);
  client.on("error", () => undefined);
  if (!policy) {
    client.destroy();
    return;
  }
  let tls = speech === "tls";
  let buffered = Buffer.alloc(0);
  const early = speech === "sniff" ? undefined : connectEarly(opts, policy, source, port, client);
  const timer = setTimeout(() => client.destroy(), PEEK_TIMEOUT_MS);
  const onData = (chunk: Buffer) => {
    if (speech === "sniff" && buffered.length === 0 && chunk.length > 0) tls = chunk[0] === TLS_HANDSHAKE;
    const peek = tls ? peekTlsServerName : peekHttpHost;
    buffered = Buffer.concat([buffered, chunk]);
    const result: Peek = buffered.length > MAX_PEEK_BYTES ? { state: "invalid", reason: "no name in the first 64 KiB" } : peek(buffered);
    if (result.state === "more") return;
    clearTimeout(timer);
    client.off("data", onData);
    client.pause();
    const base = { sandboxId: policy.sandboxId, via: "proxy" as const, port, bytesOut: 0, bytesIn: 0 };
    if (result.state === "invalid") {
      early?.discard();
      refuse(opts, client, tls, { ...base, verdict: "denied", rule: result.reason, atMs: Date.now() });
      return;
    }
    if (result.host === undefined) {
      early?.discard();
      refuse(opts, client, tls, { ...base, verdict: "denied", rule: "no server name (SNI)", atMs: Date.now() });
      return;
    }
    void decide(opts, policy, result.host, early?.ip).then(
      ({ verdict, ip }) => {
        const record: EgressRecord = { ...base, host: result.host, ...(ip ? { ip } : {}), verdict: verdict.allowed ? "allowed" : "denied", rule: verdict.rule, atMs: 0 };
        // The early connection serves only the address the verdict chose, and only when no user's proxy is in the way.
        const usable = verdict.allowed && ip !== undefined && ip === early?.ip && !opts.tunnels?.(policy.sandboxId) ? early : undefined;
        if (!usable) early?.discard();
        if (!verdict.allowed || ip === undefined) refuse(opts, client, tls, { ...record, atMs: Date.now() });
        else {
          // A sandbox whose egress goes through its user's proxy has its transformed requests go that way too.
          const dial = opts.tunnels?.(policy.sandboxId) ? () => opts.dial?.(policy.sandboxId, ip, port) ?? Promise.reject(new Error("no proxy")) : undefined;
          const target = { sandboxId: policy.sandboxId, host: result.host!, ip, port, tls, dial };
          const done = (bytes: { bytesOut: number; bytesIn: number }) => opts.audit.add({ ...record, ...bytes, atMs: Date.now() });
          relayIfTransformed(opts.interceptor?.(), client, buffered, target, done).then(
            (relayed) => {
              if (relayed) usable?.discard();
              else splice(opts, client, ip, port, tls, buffered, record, relayer, usable);
            },
            () => {
              usable?.discard();
              client.destroy();
            },
          );
        }
      },
      () => {
        early?.discard();
        client.destroy();
      },
    );
  };
  client.on("data", onData);
  client.once("close", () => clearTimeout(timer));
  // A listener for 80/443 runs this in its accept callback, before Node has read anything: the head is often there
  // already (always on a loaded host), and read now it is judged in this turn of the event loop, not the next.
  // (The any-port listener's sockets may have been read while conntrack was asked.)
  if (speech !== "sniff") {
    const arrived = socketReadNow(client, MAX_PEEK_BYTES, opts.logger);
    if (arrived) onData(arrived);
  }
}

/** An upstream connection opened before the verdict (connectEarly). */
interface EarlyUpstream {
  readonly ip: string;
  /** The socket, connected or connecting, now the caller's; undefined when it failed already or is too old. */
  take(): Socket | undefined;
  /** Close it unused. */
  discard(): void;
}

/**
 * Opens the upstream connection at once when the client was going to an address Burrow's resolver gave it for a name
 * its rules allow (not forbidden, no user's proxy): see the file's comment. Undefined when it may not.
 */
function connectEarly(opts: EgressProxyOptions, policy: ProxyPolicy, source: string, port: number, client: Socket): EarlyUpstream | undefined {
  if (!opts.resolved || opts.tunnels?.(policy.sandboxId)) return undefined;
  const dst = socketOriginalDestination(client, opts.logger);
  if (dst === undefined || dst.port !== port || opts.forbidden(dst.ip) !== undefined) return undefined;
  const names = opts.resolved.namesOf(source, dst.ip);
  const allowed = names.some((name) => {
    const verdict = judgeHost(policy, name) ?? judgeAddress(policy, dst.ip);
    return verdict.allowed;
  });
  if (!allowed) return undefined;
  const upstream = connectUpstream(dst.ip, port);
  const since = Date.now();
  // Until taken: a failure just makes it unusable (the connection is then made as without it).
  const onError = () => upstream.destroy();
  const onClientClose = () => upstream.destroy();
  upstream.on("error", onError);
  client.once("close", onClientClose);
  const release = () => {
    upstream.off("error", onError);
    client.off("close", onClientClose);
  };
  return {
    ip: dst.ip,
    take() {
      release();
      if (!upstream.destroyed && Date.now() - since <= EARLY_MAX_AGE_MS) return upstream;
      upstream.destroy();
      return undefined;
    },
    discard() {
      release();
      upstream.destroy();
    },
  };
}

function connectUpstream(ip: string, port: number): Socket {
  const upstream = new Socket({ readableHighWaterMark: HIGH_WATER_MARK, writableHighWaterMark: HIGH_WATER_MARK, allowHalfOpen: true } as SocketConstructorOpts);
  upstream.connect({ host: ip, port, noDelay: true });
  return upstream;
}

/**
 * The verdict on a host and, when allowed, the address to connect to: `prefer` when the name resolves to it (the
 * address the client chose, already being connected to), else the first the name has that is not forbidden.
 */
async function decide(opts: EgressProxyOptions, policy: SandboxPolicy, host: string, prefer?: string): Promise<{ verdict: EgressVerdict; ip?: string }> {
  if (isIPv4(host)) {
    const verdict = judgeHost(policy, host)!;
    const why = opts.forbidden(host);
    return why && verdict.allowed ? { verdict: { allowed: false, rule: why }, ip: host } : { verdict, ip: host };
  }
  const byName = judgeHost(policy, host);
  if (byName && !byName.allowed) return { verdict: byName };
  const ips = await opts.resolve4(host);
  if (ips.length === 0) return { verdict: { allowed: false, rule: `${host} does not resolve` } };
  // The first address the name has that is not forbidden; a name allowed by a domain entry may go where it points,
  // one that no domain entry names is judged by that address.
  const usable = (a: string) => opts.forbidden(a) === undefined;
  const ip = prefer !== undefined && ips.includes(prefer) && usable(prefer) ? prefer : ips.find(usable);
  if (ip === undefined) return { verdict: { allowed: false, rule: opts.forbidden(ips[0]!)! }, ip: ips[0]! };
  return { verdict: byName ?? judgeAddress(policy, ip), ip };
}

function refuse(opts: EgressProxyOptions, client: Socket, tls: boolean, record: EgressRecord): void {
  opts.audit.add(record);
  if (tls) {
    client.destroy();
    return;
  }
  const body = `Burrow: egress to ${record.host ?? "this destination"} is denied (${record.rule})\n`;
  client.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

function splice(opts: EgressProxyOptions, client: Socket, ip: string, port: number, tls: boolean, first: Buffer, record: EgressRecord, relayer: Relayer, early?: EarlyUpstream): void {
  const report = (bytes: RelayedBytes) => opts.audit.add({ ...record, ...bytes, atMs: Date.now() });
  // Taken here, where its failure handlers are attached in the same tick.
  const ready = early?.take();
  const dialed = ready ? undefined : opts.dial?.(record.sandboxId, ip, port);
  if (dialed) {
    dialed.then(
      (upstream) => relayer(client, upstream, first, report),
      (err: Error) => refuse(opts, client, tls, { ...record, verdict: "denied", rule: `egress proxy: ${err.message}`, atMs: Date.now() }),
    );
    return;
  }
  const upstream = ready ?? connectUpstream(ip, port);
  client.setNoDelay(true);
  if (!upstream.connecting) {
    relayer(client, upstream, first, report);
    return;
  }
  const timer = setTimeout(() => upstream.destroy(new Error("connect timeout")), CONNECT_TIMEOUT_MS);
  // Until connected: either side ending ends both, and the attempt is audited with no bytes.
  const fail = () => {
    clearTimeout(timer);
    detach();
    client.destroy();
    upstream.destroy();
    report({ bytesOut: 0, bytesIn: 0 });
  };
  const detach = () => {
    for (const s of [client, upstream]) {
      s.off("error", fail);
      s.off("close", fail);
    }
  };
  for (const s of [client, upstream]) {
    s.on("error", fail);
    s.once("close", fail);
  }
  upstream.once("connect", () => {
    clearTimeout(timer);
    detach();
    relayer(client, upstream, first, report);
  });
}
