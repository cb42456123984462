// The host side of sandboxes' egress beyond nftables, in the orchestrator's process because that process owns the
// sandboxes' addresses and rules (the network manager's attachments): the resolver on the gateway, the transparent
// egress proxy for sandboxes with domain rules or proxying, the direct path that lets the kernel forward their judged
// connections (direct-path.ts), host services, and the audit of what went out. Started after the
// network is set up; its listeners' ports go into the `redirects` nft chain.
import type { BurrowNetworkManager } from "../network/network-manager.js";
import { DirectPath } from "./direct-path.js";
import { DnsForwarder, hostUpstreams, type Upstream } from "./dns-forwarder.js";
import { startDnsServer, type DnsServer } from "./dns-server.js";
import { EgressAudit } from "./egress-audit.js";
import { startEgressProxy, type EgressProxy, type ProxyPolicy } from "./egress-proxy.js";
import { forbiddenDestinations } from "./forbidden-destinations.js";
import type { EgressInterceptor } from "./header-relay.js";
import { HostServices, type HostService } from "./host-services.js";
import { ResolvedAddresses } from "./resolved-addresses.js";
import { dialThroughUserProxy, startTunnelProxy, type TunnelProxy } from "./tunnel-proxy.js";
import type { RelayKind } from "./native-relay.js";
import type { UpstreamProxy } from "./upstream-proxy.js";

export interface EgressServiceOptions {
  network: BurrowNetworkManager;
  subnet: string;
  denyDestinations?: readonly string[];
  /** Where the resolver forwards; empty: the host's /etc/resolv.conf name servers. */
  upstreams: readonly Upstream[];
  logger?: { warn(obj: object, msg: string): void };
  /** Who moves spliced connections' bytes (the config's egressRelay). @default "native" */
  relay?: RelayKind;
}

/** Original ports the proxy takes for sandboxes with domain rules or proxying. */
export const PROXIED_PORTS = [80, 443] as const;

export class EgressService {
  readonly audit = new EgressAudit();
  readonly hostServices = new HostServices();
  readonly forwarder: DnsForwarder;
  /** What the resolver gave each sandbox, for the proxy's early upstream connects. */
  readonly #resolved = new ResolvedAddresses();
  #dns: DnsServer | undefined;
  #proxy: EgressProxy | undefined;
  /** Header transforms, handed over by the server (setInterceptor). */
  #interceptor: EgressInterceptor | undefined;
  /** Sandboxes' own proxies, looked up per connection (setUpstreamProxies). */
  #upstreams: ((sandboxId: string) => UpstreamProxy | undefined) | undefined;
  #tunnel: TunnelProxy | undefined;
  /** Connections the kernel forwards after the judge read their names; undefined when it cannot run here. */
  #direct: DirectPath | undefined;
  readonly #opts: EgressServiceOptions;
  /** Redirect updates one at a time, in the order they were asked for. */
  #redirects: Promise<void> = Promise.resolve();

  constructor(opts: EgressServiceOptions) {
    this.#opts = opts;
    this.forwarder = new DnsForwarder(opts.upstreams.length > 0 ? opts.upstreams : hostUpstreams());
  }

  get gateway(): string {
    return this.#opts.network.gateway;
  }

  async start(signal?: AbortSignal): Promise<void> {
    const { network } = this.#opts;
    const policyOf = (ip: string): ProxyPolicy | undefined => {
      const e = network.egressOf(ip);
      return e && { sandboxId: e.sandboxId, internet: e.internet, rules: e.rules };
    };
    this.#dns = await startDnsServer({
      gateway: network.gateway,
      forwarder: this.forwarder,
      policyOf,
      hostNames: () => this.hostServices.names(),
      onRefused: (ip, name, rule) => {
        const e = network.egressOf(ip);
        if (e) this.audit.add({ sandboxId: e.sandboxId, atMs: Date.now(), via: "dns", verdict: "denied", rule, host: name, bytesOut: 0, bytesIn: 0 });
      },
      onAnswered: (ip, name, addresses, ttlS) => {
        this.#resolved.note(ip, name, addresses, ttlS);
        return this.#direct?.noteAnswer(ip, name, addresses, ttlS);
      },
    });
    try {
      const forbidden = forbiddenDestinations(this.#opts.subnet, this.#opts.denyDestinations ?? []);
      const resolve4 = (name: string) => this.forwarder.resolve4(name);
      const upstreamOf = (sandboxId: string) => this.#upstreams?.(sandboxId);
      this.#tunnel = await startTunnelProxy({
        gateway: network.gateway,
        policyOf: (ip) => {
          const policy = policyOf(ip);
          return policy && { ...policy, upstream: upstreamOf(policy.sandboxId) };
        },
        resolve4,
        forbidden,
        audit: this.audit,
        relay: this.#opts.relay ?? "native",
      });
      this.#proxy = await startEgressProxy({
        gateway: network.gateway,
        ports: PROXIED_PORTS,
        policyOf,
        resolve4: (name) => this.forwarder.resolve4(name),
        forbidden: forbiddenDestinations(this.#opts.subnet, this.#opts.denyDestinations ?? []),
        audit: this.audit,
        interceptor: () => this.#interceptor,
        relay: this.#opts.relay ?? "native",
        anyPort: true,
        resolved: this.#resolved,
        ...(this.#opts.logger ? { logger: this.#opts.logger } : {}),
        tunnels: (sandboxId) => upstreamOf(sandboxId) !== undefined,
        dial: (sandboxId, ip, port) => {
          const upstream = upstreamOf(sandboxId);
          return upstream && dialThroughUserProxy({ resolve4, forbidden }, upstream, ip, port);
        },
      });
      await this.#applyRedirects(signal);
      this.#direct = await DirectPath.start(
        { network, audit: this.audit, forbidden, resolve4, ...(this.#opts.logger ? { logger: this.#opts.logger } : {}) },
        signal,
      );
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** Apply header transforms with `interceptor` from now on (undefined: splice every connection again). */
  setInterceptor(interceptor: EgressInterceptor | undefined): void {
    this.#interceptor = interceptor;
  }

  /**
   * Where each sandbox whose egress is proxied "tunnel" connects through (undefined, or a sandbox it answers
   * nothing for: such connections are refused, never made directly).
   */
  setUpstreamProxies(lookup: ((sandboxId: string) => UpstreamProxy | undefined) | undefined): void {
    this.#upstreams = lookup;
  }

  /** The CA sandboxes must trust for header transforms over TLS, when there is an interceptor. */
  get sandboxCaPem(): string | undefined {
    return this.#interceptor?.sandboxCaPem;
  }

  /** Make a host service reachable from every sandbox; the returned function takes it away again. */
  async registerHostService(service: HostService, signal?: AbortSignal): Promise<() => Promise<void>> {
    const entry = this.hostServices.add(service);
    try {
      await this.#applyRedirects(signal);
    } catch (err) {
      this.hostServices.remove(entry.name);
      throw err;
    }
    return async () => {
      if (this.hostServices.remove(entry.name)) await this.#applyRedirects();
    };
  }

  #applyRedirects(signal?: AbortSignal): Promise<void> {
    const next = this.#redirects.then(() =>
      this.#opts.network.setRedirects(
        // Names sharing a port share its listener: one DNAT rule per port.
        [...new Map(this.hostServices.list().map((s) => [s.port, { port: s.port, hostPort: s.hostPort }])).values()],
        this.#proxy?.listeners ?? new Map(),
        signal,
        this.#tunnel?.port,
        this.#proxy?.inspectPort,
      ),
    );
    this.#redirects = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    this.#direct?.close();
    this.#direct = undefined;
    await Promise.allSettled([this.#dns?.close(), this.#proxy?.close(), this.#tunnel?.close()]);
    this.#dns = undefined;
    this.#proxy = undefined;
    this.#tunnel = undefined;
  }
}
