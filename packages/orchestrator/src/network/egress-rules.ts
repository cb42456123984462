// A sandbox's egress rules (E2B's `network.allowOut` / `denyOut`) as the firewall enforces them: IPv4 addresses and
// CIDRs. E2B's semantics: an allow entry wins over a deny entry; what neither names follows allow_internet_access,
// which, when off, denies everything (ALL_TRAFFIC = 0.0.0.0/0) except what allowOut names. Domain names are parsed
// here too so that every layer agrees on what is a domain, but the firewall cannot enforce them (that needs an
// egress proxy and a resolver): callers refuse them before they get here.
import { formatCidr, type Ipv4Prefix, overlaps, parseCidr } from "./ipv4.js";
import { NetworkError } from "./network-error.js";

/** E2B's name for every IPv4 destination. */
export const ALL_TRAFFIC = "0.0.0.0/0";

/** Egress rules of one sandbox, IPv4 only, in canonical form (see normalizeEgressRules). */
export interface EgressRules {
  readonly allowOut: readonly string[];
  readonly denyOut: readonly string[];
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
 * Canonical IPv4 rules: every entry parsed (domains refused), masked to its network, prefixes covered by another
 * prefix of the same list dropped, sorted. nftables refuses overlapping intervals in one set, and a canonical form
 * makes "the same rules" comparable.
 */
export function normalizeEgressRules(rules: { allowOut?: readonly string[]; denyOut?: readonly string[] }): EgressRules {
  return { allowOut: canonicalPrefixes(rules.allowOut ?? []), denyOut: canonicalPrefixes(rules.denyOut ?? []) };
}

/** True when the rules name anything: a sandbox without rules needs no chain of its own. */
export function hasEgressRules(rules: EgressRules | undefined): rules is EgressRules {
  return rules !== undefined && (rules.allowOut.length > 0 || rules.denyOut.length > 0);
}

function canonicalPrefixes(entries: readonly string[]): string[] {
  const prefixes: Ipv4Prefix[] = [];
  for (const entry of entries) {
    const target = parseEgressTarget(entry);
    if (target.kind === "domain") {
      throw new NetworkError("invalid_argument", `'${entry}': domain rules need the egress proxy, which the firewall cannot stand in for`);
    }
    prefixes.push(parseCidr(target.cidr));
  }
  // Shortest first: a prefix is kept unless one kept before it (as long or shorter) overlaps, i.e. contains, it.
  prefixes.sort((a, b) => a.length - b.length || a.network - b.network);
  const kept: Ipv4Prefix[] = [];
  for (const p of prefixes) if (!kept.some((k) => overlaps(k, p))) kept.push(p);
  return kept.sort((a, b) => a.network - b.network || a.length - b.length).map(formatCidr);
}
