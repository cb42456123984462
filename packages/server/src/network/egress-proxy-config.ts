// A sandbox's own egress proxy (E2B's `network.egressProxy {address, username?, password?}`), as the API takes,
// keeps and shows it, and as the orchestrator learns it: a sandbox with one has its egress proxied "tunnel" (so every
// TCP port of it goes to the egress proxy, and the fact travels with its rules to everything copied from it), and
// the orchestrator asks, per connection, where that sandbox's proxy is (startEgressUpstreams). The password is kept
// with the network config (the store, 0600 in the state directory) and never answered, as E2B does.
//
// Where the proxy may be: never loopback, link-local, 0/8, multicast or reserved (refused here when given as an
// address), nor the host, the sandboxes' subnet or the operator's deny list (refused when a connection is made, after
// resolving a name, which fails that connection closed). There is no operator switch to allow more: a sandbox must
// not reach through its proxy what it could not reach itself.
import { parseUpstreamProxy, type Orchestrator, type UpstreamProxy } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxNetworkStore } from "../store/sandbox-networks.js";

export interface EgressProxyConfig {
  address: string;
  username?: string;
  password?: string;
}

const NEVER = [/^127\./, /^169\.254\./, /^0\./, /^2(2[4-9]|[3-5]\d)\./];

/** The body's egressProxy validated (400 naming the bad value), undefined for none (absent or null). */
export function egressProxyOf(value: unknown): EgressProxyConfig | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) throw invalid("network.egressProxy must be an object with an address");
  const { address, username, password, ...extra } = value as Record<string, unknown>;
  const extraField = Object.keys(extra)[0];
  if (extraField !== undefined) throw invalid(`network.egressProxy has an unsupported field '${extraField}'`);
  if (typeof address !== "string") throw invalid("network.egressProxy.address must be a string (socks5://host:port, http://host:port or host:port)");
  for (const [field, v] of [["username", username], ["password", password]] as const) {
    if (v !== undefined && typeof v !== "string") throw invalid(`network.egressProxy.${field} must be a string`);
  }
  let proxy: UpstreamProxy;
  try {
    proxy = parseUpstreamProxy(address, username as string | undefined, password as string | undefined);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  if (NEVER.some((re) => re.test(proxy.host))) throw invalid(`invalid network.egressProxy.address '${address}': ${proxy.host} is not an address sandboxes may use`);
  return { address: address.trim(), ...(username !== undefined ? { username: username as string } : {}), ...(password !== undefined ? { password: password as string } : {}) };
}

/** What GET answers: the address and username, never the password. */
export function egressProxyView(config: EgressProxyConfig): { address: string; username?: string } {
  return { address: config.address, ...(config.username !== undefined ? { username: config.username } : {}) };
}

/** Tell the orchestrator where sandboxes' proxies are (read per connection); resolves the clean-up. */
export function startEgressUpstreams(orchestrator: Orchestrator, networks: Pick<SandboxNetworkStore, "get">): () => void {
  if (!orchestrator.setEgressUpstreams) return () => undefined;
  orchestrator.setEgressUpstreams((sandboxId) => {
    const proxy = networks.get(sandboxId)?.egressProxy;
    return proxy && parseUpstreamProxy(proxy.address, proxy.username, proxy.password);
  });
  return () => orchestrator.setEgressUpstreams?.(undefined);
}

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_network_config" });
}
