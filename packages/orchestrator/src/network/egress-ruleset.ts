// nftables scripts for one sandbox's egress: its internet switch and, when it has allowOut/denyOut rules, a chain of
// its own that the instance's forward chain jumps to through the @egress verdict map (keyed by the sandbox's
// address). The chain ends in a verdict, so what the shared rules after the jump say (@internet accept) never
// applies to a sandbox with rules; @internet then only decides masquerading, and holds every sandbox that may
// reach anything beyond the bridge (internet on, or something allowed).
//
// A sandbox whose rules name domains, or whose rules are `proxied` ("inspect" or "tunnel"), is also in @proxied: its
// TCP 80/443 is redirected to the egress proxy and its UDP 443 (QUIC, which the proxy cannot judge) dropped
// (ruleset.ts); its chain holds only the CIDR entries.
//
// A sandbox whose rules are proxied "tunnel" (its egress goes through its user's proxy) is also in @tunneled: every
// TCP port its name-judging listeners do not take is redirected to the egress proxy's catch-all listener
// (egress/tunnel-proxy.ts), which connects through the user's proxy.
//
// A sandbox whose rules inspect ports beyond 80/443 (`inspectPorts`: header transforms for `host:port`) has a nat
// chain of its own behind the @inspect verdict map, which the redirects chain consults: its TCP to those ports goes
// to the shared `inspect_dnat` chain, i.e. to the egress proxy's any-port listener (its port is only known at run
// time, so redirectScript writes that chain).
//
// Every script is applied as one `nft -f` transaction: an update replaces the chain's rules, the map element and
// the set element together, and a failing one leaves the old rules in place.
import type { EgressRules } from "./egress-rules.js";
import { ALL_TRAFFIC, cidrsOf, hasRuleEntries, inspectPortsOf, proxyingOf, sendsWebThroughProxy } from "./egress-rules.js";
import type { NetworkNames } from "./names.js";

/** Name of the verdict map the forward chain looks sandbox addresses up in (declared by setupScript). */
export const EGRESS_MAP = "egress";
/** Prefix of every per-sandbox egress chain; the sandbox's address follows with `_` for `.`. */
export const EGRESS_CHAIN_PREFIX = "egress_";
/** Set of the sandbox addresses whose TCP 80/443 goes through the egress proxy (rules with domains, or proxied). */
export const PROXIED_SET = "proxied";
/** Set of the sandbox addresses whose TCP goes through their user's proxy. */
export const TUNNELED_SET = "tunneled";

/** Verdict map of sandbox addresses → their inspect chain (nat; declared by setupScript). */
export const INSPECT_MAP = "inspect";
/** Prefix of every per-sandbox inspect chain; the sandbox's address follows with `_` for `.`. */
export const INSPECT_CHAIN_PREFIX = "inspect_";
/** The chain that DNATs to the egress proxy's any-port listener (written by redirectScript). */
export const INSPECT_DNAT_CHAIN = "inspect_dnat";

export function inspectChainName(ip: string): string {
  return `${INSPECT_CHAIN_PREFIX}${ip.replaceAll(".", "_")}`;
}

/** The address a per-sandbox inspect chain belongs to, or undefined for any other chain. */
export function ipOfInspectChain(chain: string): string | undefined {
  if (!chain.startsWith(INSPECT_CHAIN_PREFIX)) return undefined;
  const parts = chain.slice(INSPECT_CHAIN_PREFIX.length).split("_");
  return parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p)) ? parts.join(".") : undefined;
}

export function egressChainName(ip: string): string {
  return `${EGRESS_CHAIN_PREFIX}${ip.replaceAll(".", "_")}`;
}

/** The address a per-sandbox chain belongs to, or undefined for any other chain. */
export function ipOfEgressChain(chain: string): string | undefined {
  if (!chain.startsWith(EGRESS_CHAIN_PREFIX)) return undefined;
  const parts = chain.slice(EGRESS_CHAIN_PREFIX.length).split("_");
  return parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p)) ? parts.join(".") : undefined;
}

/**
 * Put a sandbox's egress in the given state: internet on or off and, with rules, its own chain (allow first, then
 * deny, then the internet switch as the final verdict); with no entries, no chain and no map element. `undefined`
 * rules leave chain and map alone: a sandbox that never had rules (the common create) costs one set element.
 */
export function egressScript(names: NetworkNames, ip: string, internet: boolean, rules: EgressRules | undefined): string {
  const t = names.table;
  const lines: string[] = [];
  const allowOut = cidrsOf(rules?.allowOut ?? []);
  const denyOut = cidrsOf(rules?.denyOut ?? []);
  const reachesOut = internet || allowOut.length > 0;
  lines.push(`add element inet ${t} internet { ${ip} }`);
  if (!reachesOut) lines.push(`delete element inet ${t} internet { ${ip} }`);
  if (rules !== undefined) {
    lines.push(`add element inet ${t} ${PROXIED_SET} { ${ip} }`);
    if (!sendsWebThroughProxy(rules)) lines.push(`delete element inet ${t} ${PROXIED_SET} { ${ip} }`);
    lines.push(`add element inet ${t} ${TUNNELED_SET} { ${ip} }`);
    if (proxyingOf(rules) !== "tunnel") lines.push(`delete element inet ${t} ${TUNNELED_SET} { ${ip} }`);
    const ports = inspectPortsOf(rules);
    if (ports.length > 0) {
      const chain = inspectChainName(ip);
      lines.push(
        `add chain inet ${t} ${chain}`,
        `flush chain inet ${t} ${chain}`,
        `add rule inet ${t} ${chain} tcp dport { ${ports.join(", ")} } goto ${INSPECT_DNAT_CHAIN}`,
        `add element inet ${t} ${INSPECT_MAP} { ${ip} : jump ${chain} }`,
      );
    } else {
      lines.push(...dropInspectChainLines(names, ip));
    }
  }
  if (hasRuleEntries(rules)) {
    const chain = egressChainName(ip);
    lines.push(`add chain inet ${t} ${chain}`, `flush chain inet ${t} ${chain}`);
    // Denying ALL_TRAFFIC is the internet switch off; and without internet the deny list changes nothing.
    const open = internet && !denyOut.includes(ALL_TRAFFIC);
    if (allowOut.length > 0) lines.push(`add rule inet ${t} ${chain} ${daddrMatch(allowOut)}accept`);
    if (open && denyOut.length > 0) lines.push(`add rule inet ${t} ${chain} ${daddrMatch(denyOut)}counter drop`);
    lines.push(open ? `add rule inet ${t} ${chain} accept` : `add rule inet ${t} ${chain} counter drop`);
    lines.push(`add element inet ${t} ${EGRESS_MAP} { ${ip} : jump ${chain} }`);
  } else if (rules !== undefined) {
    lines.push(...dropEgressChainLines(names, ip));
  }
  return `${lines.join("\n")}\n`;
}

/** Everything of a sandbox's egress gone: set element, map element, chain. Idempotent (`add` before `delete`). */
export function clearEgressScript(names: NetworkNames, ip: string): string {
  const t = names.table;
  return [
    `add element inet ${t} internet { ${ip} }`,
    `delete element inet ${t} internet { ${ip} }`,
    `add element inet ${t} ${PROXIED_SET} { ${ip} }`,
    `delete element inet ${t} ${PROXIED_SET} { ${ip} }`,
    `add element inet ${t} ${TUNNELED_SET} { ${ip} }`,
    `delete element inet ${t} ${TUNNELED_SET} { ${ip} }`,
    ...dropEgressChainLines(names, ip),
    ...dropInspectChainLines(names, ip),
  ].join("\n") + "\n";
}

/** Lines removing a sandbox's map element and chain, whether or not they exist. */
export function dropEgressChainLines(names: NetworkNames, ip: string): string[] {
  const t = names.table;
  const chain = egressChainName(ip);
  return [
    `add chain inet ${t} ${chain}`,
    `add element inet ${t} ${EGRESS_MAP} { ${ip} : jump ${chain} }`,
    `delete element inet ${t} ${EGRESS_MAP} { ${ip} }`,
    `flush chain inet ${t} ${chain}`,
    `delete chain inet ${t} ${chain}`,
  ];
}

/** Lines removing a sandbox's inspect map element and chain, whether or not they exist. */
export function dropInspectChainLines(names: NetworkNames, ip: string): string[] {
  const t = names.table;
  const chain = inspectChainName(ip);
  return [
    `add chain inet ${t} ${chain}`,
    `add element inet ${t} ${INSPECT_MAP} { ${ip} : jump ${chain} }`,
    `delete element inet ${t} ${INSPECT_MAP} { ${ip} }`,
    `flush chain inet ${t} ${chain}`,
    `delete chain inet ${t} ${chain}`,
  ];
}

/** `ip daddr { … } ` for a canonical prefix list; nothing for ALL_TRAFFIC (every IPv4 destination matches). */
function daddrMatch(prefixes: readonly string[]): string {
  if (prefixes.includes(ALL_TRAFFIC)) return "";
  return `ip daddr { ${prefixes.join(", ")} } `;
}
