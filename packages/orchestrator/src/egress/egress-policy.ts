// How a sandbox's rules judge a destination seen on the wire (a name from DNS, SNI or Host, or an address), E2B's
// semantics: an allow entry wins over a deny entry. A name is judged by the domain entries first; a name that no
// domain entry names is judged by the address it resolves to, like any connection (the CIDR entries, then the
// internet switch). A sandbox without internet access is as one that denies ALL_TRAFFIC.
import { isIPv4 } from "node:net";
import { ALL_TRAFFIC, cidrsOf, domainsOf, type EgressRules } from "../network/egress-rules.js";
import { parseCidr, parseIpv4 } from "../network/ipv4.js";

export interface EgressVerdict {
  allowed: boolean;
  /** The entry that decided (`*.example.com`, `10.0.0.0/8`, `ALL_TRAFFIC`), or `internet` / `no rules`. */
  rule: string;
}

export interface SandboxPolicy {
  internet: boolean;
  rules: EgressRules | undefined;
}

/** A name's verdict when its domain entries decide it, else undefined (its address decides). */
export function judgeName(policy: SandboxPolicy, name: string): EgressVerdict | undefined {
  const host = canonicalName(name);
  const allow = domainsOf(policy.rules?.allowOut ?? []).find((d) => domainMatches(d, host));
  if (allow !== undefined) return { allowed: true, rule: allow };
  const deny = domainsOf(policy.rules?.denyOut ?? []).find((d) => domainMatches(d, host));
  if (deny !== undefined) return { allowed: false, rule: deny };
  return undefined;
}

/**
 * Whether the resolver answers a name for the sandbox: NXDOMAIN when no allow entry names it and a deny entry does,
 * or every address is denied (ALL_TRAFFIC denied, or internet off) and no CIDR is allowed to reach it through.
 * A name whose fate depends on its address is answered; the connection is judged by the address then.
 */
export function nameResolves(policy: SandboxPolicy, name: string): EgressVerdict {
  const byName = judgeName(policy, name);
  if (byName) return byName;
  if (deniesEverything(policy) && cidrsOf(policy.rules?.allowOut ?? []).length === 0) {
    return { allowed: false, rule: policy.internet ? "ALL_TRAFFIC" : "internet" };
  }
  return { allowed: true, rule: "no rules" };
}

/** An address's verdict: allowed CIDRs, then denied CIDRs, then the internet switch. */
export function judgeAddress(policy: SandboxPolicy, ip: string): EgressVerdict {
  const allow = cidrsOf(policy.rules?.allowOut ?? []).find((c) => inCidr(ip, c));
  if (allow !== undefined) return { allowed: true, rule: allow };
  const deny = cidrsOf(policy.rules?.denyOut ?? []).find((c) => inCidr(ip, c));
  if (deny !== undefined) return { allowed: false, rule: deny === ALL_TRAFFIC ? "ALL_TRAFFIC" : deny };
  if (!policy.internet) return { allowed: false, rule: "internet" };
  return { allowed: true, rule: "no rules" };
}

/** A host as written on the wire (SNI, Host without port): an IPv4 literal is judged as an address, a name by name. */
export function judgeHost(policy: SandboxPolicy, host: string): EgressVerdict | undefined {
  return isIPv4(host) ? judgeAddress(policy, host) : judgeName(policy, host);
}

function deniesEverything(policy: SandboxPolicy): boolean {
  return !policy.internet || (policy.rules?.denyOut ?? []).includes(ALL_TRAFFIC);
}

/** `*.example.com` matches names below example.com (not example.com itself); other entries match exactly. */
export function domainMatches(entry: string, host: string): boolean {
  if (entry.startsWith("*.")) return host.endsWith(entry.slice(1));
  return host === entry;
}

export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

function inCidr(ip: string, cidr: string): boolean {
  const prefix = parseCidr(cidr);
  const mask = prefix.length === 0 ? 0 : (~0 << (32 - prefix.length)) >>> 0;
  return ((parseIpv4(ip) & mask) >>> 0) === prefix.network;
}
