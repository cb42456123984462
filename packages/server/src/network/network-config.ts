// E2B's sandbox network config (create body `network` and `allow_internet_access`, PUT /sandboxes/{id}/network) as
// Burrow keeps and enforces it. Egress by IPv4 address and CIDR is enforced by the orchestrator's firewall, by domain
// (`example.com`, `*.example.com`) by its resolver and transparent egress proxy; ingress (allowPublicTraffic's traffic
// token, maskRequestHost) by the gateway; header transforms (`rules`, network-rules.ts) and a user's own proxy
// (`egressProxy`, egress-proxy-config.ts) by the egress proxy; httpsPorts (sandbox ports that serve HTTPS) by the
// gateway, which reaches those ports over TLS without verifying, as E2B's proxy does.
import { randomBytes } from "node:crypto";
import { ALL_TRAFFIC, parseEgressTarget, type EgressProxying, type EgressRuleLists, type SandboxEgress } from "@burrow/orchestrator";
import { BurrowError, Code, ENVD_PORT } from "@burrow/protocol";
import { egressProxyOf, egressProxyView, type EgressProxyConfig } from "./egress-proxy-config.js";
import { inspectPortsOf, networkRules, type NetworkRules } from "./network-rules.js";

/** What a sandbox keeps of its network config (the store's JSON). */
export interface SandboxNetworkConfig {
  /** Entries as the caller wrote them (trimmed); IPv4 addresses, CIDRs and domains. */
  allowOut: string[];
  denyOut: string[];
  /** false: every port but envd's needs the `e2b-traffic-access-token` header. */
  allowPublicTraffic: boolean;
  /** Host header sent to sandbox ports other than envd's; `${PORT}` is the target port. */
  maskRequestHost?: string;
  /** Sandbox ports serving HTTPS: the gateway speaks TLS to them (certificates not verified). Sorted, unique. */
  httpsPorts?: number[];
  /** Issued at create when allowPublicTraffic is false. */
  trafficAccessToken?: string;
  /** Header transforms per host (network-rules.ts), placeholders as written. */
  rules?: NetworkRules;
  /** Whose secrets the rules' placeholders name (the team's anchor key id when they were set). */
  rulesOwner?: number;
  /** The sandbox's own proxy (egress-proxy-config.ts); its password is never answered. */
  egressProxy?: EgressProxyConfig;
}

/** The create body's `network` as sent (its JSON types already checked by the schema). */
export interface NetworkBody {
  allowOut?: string[];
  denyOut?: string[];
  allowPublicTraffic?: boolean;
  maskRequestHost?: string;
  httpsPorts?: number[];
  rules?: Record<string, unknown>;
  egressProxy?: unknown;
}

/** PUT /sandboxes/{id}/network (SandboxNetworkUpdateConfig). */
export interface NetworkUpdateBody {
  allowOut?: string[];
  denyOut?: string[];
  rules?: Record<string, unknown>;
  egressProxy?: unknown;
  allow_internet_access?: boolean;
  maskRequestHost?: string;
}

export const PORT_PLACEHOLDER = "${PORT}";
const MAX_ENTRIES = 1000;
// A host[:port] with the placeholder allowed anywhere: letters, digits, dots, dashes, brackets (IPv6), colons.
const MASK_HOST = /^[A-Za-z0-9.\-[\]:_]+$/;

/** The config a create asks for, or undefined when it asks for nothing beyond the defaults. */
export function networkFromCreate(body: NetworkBody | undefined): SandboxNetworkConfig | undefined {
  if (body === undefined) return undefined;
  const config: SandboxNetworkConfig = {
    allowOut: egressEntries(body.allowOut, "allowOut"),
    denyOut: egressEntries(body.denyOut, "denyOut"),
    allowPublicTraffic: body.allowPublicTraffic ?? true,
  };
  if (body.maskRequestHost !== undefined) config.maskRequestHost = maskRequestHost(body.maskRequestHost);
  const tlsPorts = httpsPorts(body.httpsPorts);
  if (tlsPorts.length > 0) config.httpsPorts = tlsPorts;
  const rules = networkRules(body.rules);
  if (rules) config.rules = rules;
  const proxy = egressProxyOf(body.egressProxy);
  if (proxy) config.egressProxy = proxy;
  if (!config.allowPublicTraffic) config.trafficAccessToken = newTrafficToken();
  return config;
}

/**
 * The config after a PUT: egress rules replaced (omitted lists are cleared); ingress (token, public traffic) kept;
 * maskRequestHost replaced only when sent, since the SDK's updateNetwork never sends it.
 */
export function networkFromUpdate(current: SandboxNetworkConfig | undefined, body: NetworkUpdateBody): SandboxNetworkConfig {
  const next: SandboxNetworkConfig = {
    allowOut: egressEntries(body.allowOut, "allowOut"),
    denyOut: egressEntries(body.denyOut, "denyOut"),
    allowPublicTraffic: current?.allowPublicTraffic ?? true,
  };
  const mask = body.maskRequestHost !== undefined ? body.maskRequestHost : current?.maskRequestHost;
  if (mask !== undefined && mask !== "") next.maskRequestHost = maskRequestHost(mask);
  if (current?.trafficAccessToken !== undefined) next.trafficAccessToken = current.trafficAccessToken;
  // Ingress, which E2B's update does not carry: kept.
  if (current?.httpsPorts !== undefined) next.httpsPorts = [...current.httpsPorts];
  const rules = networkRules(body.rules);
  if (rules) next.rules = rules;
  // Like the lists, an update without it clears it (E2B: repeat it in every update that should keep tunneling).
  const proxy = egressProxyOf(body.egressProxy);
  if (proxy) next.egressProxy = proxy;
  return next;
}

/** The egress part of a config: what copies of a sandbox (forks, snapshot and checkpoint children) carry. */
export type EgressConfig = Pick<SandboxNetworkConfig, "allowOut" | "denyOut" | "rules" | "rulesOwner" | "egressProxy">;

/** The egress part of a config, copied (kept with a snapshot or checkpoint for the sandboxes started from it). */
export function egressConfigOf(config: EgressConfig): EgressConfig {
  return {
    allowOut: [...config.allowOut],
    denyOut: [...config.denyOut],
    ...(config.rules !== undefined ? { rules: config.rules, ...(config.rulesOwner !== undefined ? { rulesOwner: config.rulesOwner } : {}) } : {}),
    ...(config.egressProxy !== undefined ? { egressProxy: config.egressProxy } : {}),
  };
}

/**
 * The config of a sandbox that copies another (a fork, a checkpoint's child): the egress `egress` says (a fork's:
 * its source's own; a checkpoint child's: the one kept when the checkpoint was taken), lists, header transforms and
 * user's proxy alike, and the source's ingress, with a traffic token of its own when public traffic is off, as E2B
 * gives every fork. Undefined when there is nothing to copy.
 */
export function copiedNetwork(source: SandboxNetworkConfig | undefined, egress: EgressConfig | undefined = source): SandboxNetworkConfig | undefined {
  if (source === undefined && !hasEgressRules(egress)) return undefined;
  const copy: SandboxNetworkConfig = {
    ...egressConfigOf(egress ?? { allowOut: [], denyOut: [] }),
    allowPublicTraffic: source?.allowPublicTraffic ?? true,
  };
  if (source?.maskRequestHost !== undefined) copy.maskRequestHost = source.maskRequestHost;
  if (source?.httpsPorts !== undefined) copy.httpsPorts = [...source.httpsPorts];
  if (!copy.allowPublicTraffic) copy.trafficAccessToken = newTrafficToken();
  return copy;
}

/**
 * A create's config with the egress a snapshot or checkpoint carries (its sandbox's when taken: lists, header
 * transforms, user's proxy), for a create that sets no egress of its own (no allowOut/denyOut, no
 * allow_internet_access): a copy of a restricted sandbox stays restricted. Header transforms or a proxy the create
 * sets itself win over the inherited ones; ingress stays as the create asked.
 */
export function withInheritedEgress(config: SandboxNetworkConfig | undefined, inherited: EgressConfig): SandboxNetworkConfig | undefined {
  if (!hasEgressRules(inherited)) return config;
  const next: SandboxNetworkConfig = { ...(config ?? { allowPublicTraffic: true }), allowOut: [...inherited.allowOut], denyOut: [...inherited.denyOut] };
  if (next.rules === undefined && inherited.rules !== undefined) {
    next.rules = inherited.rules;
    if (inherited.rulesOwner !== undefined) next.rulesOwner = inherited.rulesOwner;
  }
  if (next.egressProxy === undefined && inherited.egressProxy !== undefined) next.egressProxy = inherited.egressProxy;
  return next;
}

/**
 * What of the sandbox's TCP the orchestrator sends through its egress proxy beyond its domain entries: every port
 * (then its user's proxy) with an egressProxy, 80/443 with header transforms (which the proxy applies).
 */
export function proxyingOf(config: Pick<SandboxNetworkConfig, "rules" | "egressProxy"> | undefined): EgressProxying {
  return config?.egressProxy !== undefined ? "tunnel" : config?.rules !== undefined ? "inspect" : "none";
}

/** allowOut/denyOut, proxying and inspected ports for the orchestrator's create, undefined when the config has none. */
export function egressListsOf(config: SandboxNetworkConfig | undefined): EgressRuleLists | undefined {
  return config && hasEgressRules(config)
    ? { allowOut: [...config.allowOut], denyOut: [...config.denyOut], proxied: proxyingOf(config), ...inspectedPorts(config) }
    : undefined;
}

/** What the firewall and the egress proxy enforce for a config. */
export function egressOf(config: SandboxNetworkConfig | undefined, allowInternetAccess: boolean): SandboxEgress {
  return { allowInternetAccess, allowOut: [...(config?.allowOut ?? [])], denyOut: [...(config?.denyOut ?? [])], proxied: proxyingOf(config), ...inspectedPorts(config) };
}

/** The ports beyond 80/443 that header transforms name (`host:port` rule keys), when there are any. */
function inspectedPorts(config: Pick<SandboxNetworkConfig, "rules"> | undefined): { inspectPorts?: number[] } {
  const ports = inspectPortsOf(config?.rules);
  return ports.length > 0 ? { inspectPorts: ports } : {};
}

/** True when the sandbox needs egress of its own (not just the internet switch): entries, transforms or a proxy. */
export function hasEgressRules(config: EgressConfig | undefined): boolean {
  return (config?.allowOut.length ?? 0) > 0 || (config?.denyOut.length ?? 0) > 0 || config?.rules !== undefined || config?.egressProxy !== undefined;
}

/** SandboxDetail.network in E2B's field names (the traffic token is not part of it). */
export function networkView(config: SandboxNetworkConfig) {
  return {
    allowOut: [...config.allowOut],
    denyOut: [...config.denyOut],
    allowPublicTraffic: config.allowPublicTraffic,
    ...(config.maskRequestHost !== undefined ? { maskRequestHost: config.maskRequestHost } : {}),
    ...(config.httpsPorts !== undefined ? { httpsPorts: [...config.httpsPorts] } : {}),
    ...(config.rules !== undefined ? { rules: config.rules } : {}),
    ...(config.egressProxy !== undefined ? { egressProxy: egressProxyView(config.egressProxy) } : {}),
  };
}

function newTrafficToken(): string {
  return randomBytes(24).toString("hex");
}

/** E2B's httpsPorts, validated (400 naming a bad entry: not a TCP port, or envd's), sorted and unique. */
function httpsPorts(ports: readonly number[] | undefined): number[] {
  for (const port of ports ?? []) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid(`invalid network.httpsPorts entry '${port}': expected a TCP port 1-65535`);
    if (port === ENVD_PORT) throw invalid(`invalid network.httpsPorts entry '${port}': envd's port cannot be listed`);
  }
  return [...new Set(ports ?? [])].sort((a, b) => a - b);
}

/** Validated entries: 400 naming the first malformed one. */
function egressEntries(entries: string[] | undefined, field: "allowOut" | "denyOut"): string[] {
  if (entries === undefined) return [];
  if (entries.length > MAX_ENTRIES) throw invalid(`network.${field} has ${entries.length} entries; at most ${MAX_ENTRIES}`);
  const out: string[] = [];
  for (const entry of entries) {
    let target;
    try {
      target = parseEgressTarget(entry);
    } catch {
      throw invalid(`invalid network.${field} entry '${entry}': expected an IPv4 address, a CIDR (a.b.c.d/n), a domain name or *.domain`);
    }
    // ALL_TRAFFIC stays spelled as E2B spells it; other entries as sent.
    out.push(target.kind === "cidr" && target.cidr === ALL_TRAFFIC ? ALL_TRAFFIC : entry.trim());
  }
  return out;
}

function maskRequestHost(value: string): string {
  const literal = value.replaceAll(PORT_PLACEHOLDER, "1");
  if (value.length === 0 || value.length > 255 || !MASK_HOST.test(literal)) {
    throw invalid(`invalid network.maskRequestHost '${value}': expected host[:port], where \${PORT} stands for the target port`);
  }
  return value;
}

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_network_config" });
}
