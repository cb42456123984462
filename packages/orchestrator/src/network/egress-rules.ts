// A sandbox's egress rules (E2B's `network.allowOut` / `denyOut`) as the firewall enforces them: IPv4 addresses and
// CIDRs. E2B's semantics: an allow entry wins over a deny entry; what neither names follows allow_internet_access,
// which, when off, denies everything (ALL_TRAFFIC = 0.0.0.0/0) except what allowOut names. Domain entries (`x.y`,
// `*.x.y`) live in the same lists, so that everything that copies a sandbox's rules (forks, checkpoints, snapshots)
// carries them; the firewall enforces only the CIDRs (cidrsOf) and a sandbox with domain entries goes through the
// egress proxy and resolver (../egress/), which judge names. What else of a sandbox's TCP goes through the egress
// proxy is a field of its own (`proxied`), carried with the lists by everything that copies them.
import { formatCidr, type Ipv4Prefix, overlaps, parseCidr } from "./ipv4.js";
import { NetworkError } from "./network-error.js";

/** E2B's name for every IPv4 destination. */
export const ALL_TRAFFIC = "0.0.0.0/0";

/**
 * What of a sandbox's TCP goes through the egress proxy beyond what its domain entries send there (80/443):
 * - "none": nothing more;
 * - "inspect": 80/443 always, even without domain entries (the control plane has header transforms for the
 *   sandbox, which the proxy applies);
 * - "tunnel": 80/443 and every other TCP port (but the gateway's), out through the sandbox's user's proxy.
 */
export type EgressProxying = "none" | "inspect" | "tunnel";

const PROXYING: readonly EgressProxying[] = ["none", "inspect", "tunnel"];

/** Egress rules of one sandbox in canonical form (see normalizeEgressRules): CIDRs first, then domains. */
export interface EgressRules {
  readonly allowOut: readonly string[];
  readonly denyOut: readonly string[];
  /** Absent: "none" (the canonical form leaves it out then, so rules without it read as before it existed). */
  readonly proxied?: EgressProxying;
  /**
   * TCP ports other than 80/443 that the egress proxy takes too (the control plane has header transforms for
   * `host:port` there): HTTP or TLS, told by the first bytes. Sorted, unique; absent when none.
   */
  readonly inspectPorts?: readonly number[];
}

/** What one allowOut / denyOut entry names. */
export type EgressTarget = { kind: "cidr"; cidr: string } | { kind: "domain"; domain: string; wildcard: boolean };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4ISH = /^[0-9./]+$/;

/**
 * Parse an entry: `a.b.c.d`, `a.b.c.d/n`, `example.com` or `*.example.com`. Throws `invalid_argument` naming the
 * entry for anything else (ports, IPv6, malformed addresses, bad labels).
 */
export function parseEgressTarget(entry: string): EgressTarget {
  const text = entry.trim();
  if (text === "") throw new NetworkError("invalid_argument", `empty egress entry`);
  if (IPV4ISH.test(text)) {
    try {
      return { kind: "cidr", cidr: formatCidr(parseCidr(text.includes("/") ? text : `${text}/32`)) };
    } catch {
      throw new NetworkError("invalid_argument", `'${entry}' is not an IPv4 address or CIDR`);
    }
  }
  if (text.includes(":")) throw new NetworkError("invalid_argument", `'${entry}': ports and IPv6 addresses are not supported`);
  const lower = text.toLowerCase().replace(/\.$/, "");
  const wildcard = lower.startsWith("*.");
  const name = wildcard ? lower.slice(2) : lower;
  const labels = name.split(".");
  // A domain needs at least two labels and a top-level label that is not all digits (so "10.0.0" is not one).
  if (name.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1)!)) {
    throw new NetworkError("invalid_argument", `'${entry}' is not an IPv4 address, CIDR or domain name`);
  }
  return { kind: "domain", domain: name, wildcard };
}

/**
 * Canonical rules: every entry parsed; CIDRs masked to their network, prefixes covered by another prefix of the same
 * list dropped, sorted (nftables refuses overlapping intervals in one set); then domains lower-cased, without a
 * trailing dot, deduplicated and sorted. A canonical form makes "the same rules" comparable.
 */
export function normalizeEgressRules(rules: {
  allowOut?: readonly string[];
  denyOut?: readonly string[];
  proxied?: EgressProxying;
  inspectPorts?: readonly number[];
}): EgressRules {
  const proxied = rules.proxied ?? "none";
  if (!PROXYING.includes(proxied)) throw new NetworkError("invalid_argument", `'${String(proxied)}' is not an egress proxying (${PROXYING.join(", ")})`);
  const inspectPorts = canonicalPorts(rules.inspectPorts ?? []);
  return {
    allowOut: canonicalEntries(rules.allowOut ?? []),
    denyOut: canonicalEntries(rules.denyOut ?? []),
    ...(proxied !== "none" ? { proxied } : {}),
    ...(inspectPorts.length > 0 ? { inspectPorts } : {}),
  };
}

/** A copy of rules (lists, proxying and inspected ports), for a record of something made from the sandbox. */
export function copyEgressRules(rules: EgressRules): { allowOut: string[]; denyOut: string[]; proxied?: EgressProxying; inspectPorts?: number[] } {
  return {
    allowOut: [...rules.allowOut],
    denyOut: [...rules.denyOut],
    ...(rules.proxied && rules.proxied !== "none" ? { proxied: rules.proxied } : {}),
    ...(rules.inspectPorts && rules.inspectPorts.length > 0 ? { inspectPorts: [...rules.inspectPorts] } : {}),
  };
}

/** The ports beyond 80/443 the egress proxy takes for the sandbox (EgressRules.inspectPorts). */
export function inspectPortsOf(rules: EgressRules | undefined): readonly number[] {
  return rules?.inspectPorts ?? [];
}

/** Valid TCP ports, sorted and unique, without 80/443 (always the proxy's when it inspects) and 53 (the resolver's). */
function canonicalPorts(ports: readonly number[]): number[] {
  for (const p of ports) {
    if (!Number.isInteger(p) || p < 1 || p > 65535) throw new NetworkError("invalid_argument", `inspected port '${String(p)}' is not a TCP port`);
    if (p === 53) throw new NetworkError("invalid_argument", `port 53 is the resolver's and cannot be inspected`);
  }
  return [...new Set(ports)].filter((p) => p !== 80 && p !== 443).sort((a, b) => a - b);
}

/** How the sandbox's TCP goes through the egress proxy beyond its domain entries. */
export function proxyingOf(rules: EgressRules | undefined): EgressProxying {
  return rules?.proxied ?? "none";
}

/** True when the sandbox's TCP 80/443 goes through the egress proxy: domain entries, or proxying asked for. */
export function sendsWebThroughProxy(rules: EgressRules | undefined): boolean {
  return hasDomainRules(rules) || proxyingOf(rules) !== "none";
}

/** The CIDR entries of a canonical list (what nftables enforces). */
export function cidrsOf(entries: readonly string[]): string[] {
  return entries.filter((e) => !isDomainEntry(e));
}

/** The domain entries of a canonical list (`x.y` or `*.x.y`). */
export function domainsOf(entries: readonly string[]): string[] {
  return entries.filter(isDomainEntry);
}

/** True when the rules name a domain: the sandbox's TCP 80/443 then goes through the egress proxy. */
export function hasDomainRules(rules: EgressRules | undefined): boolean {
  return rules !== undefined && (rules.allowOut.some(isDomainEntry) || rules.denyOut.some(isDomainEntry));
}

function isDomainEntry(entry: string): boolean {
  return !/^[0-9./]+$/.test(entry);
}

/** True when the rules name any entry: a sandbox without entries needs no chain of its own. */
export function hasRuleEntries(rules: EgressRules | undefined): rules is EgressRules {
  return rules !== undefined && (rules.allowOut.length > 0 || rules.denyOut.length > 0);
}

/** True when the rules ask for anything beyond the internet switch (entries or proxying): worth applying and keeping. */
export function hasEgressRules(rules: EgressRules | undefined): rules is EgressRules {
  return hasRuleEntries(rules) || proxyingOf(rules) !== "none" || inspectPortsOf(rules).length > 0;
}

function canonicalEntries(entries: readonly string[]): string[] {
  const prefixes: Ipv4Prefix[] = [];
  const domains = new Set<string>();
  for (const entry of entries) {
    const target = parseEgressTarget(entry);
    if (target.kind === "domain") domains.add(target.wildcard ? `*.${target.domain}` : target.domain);
    else prefixes.push(parseCidr(target.cidr));
  }
  // Shortest first: a prefix is kept unless one kept before it (as long or shorter) overlaps, i.e. contains, it.
  prefixes.sort((a, b) => a.length - b.length || a.network - b.network);
  const kept: Ipv4Prefix[] = [];
  for (const p of prefixes) if (!kept.some((k) => overlaps(k, p))) kept.push(p);
  return [...kept.sort((a, b) => a.network - b.network || a.length - b.length).map(formatCidr), ...[...domains].sort()];
}
