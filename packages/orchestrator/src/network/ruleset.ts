// nftables scripts of an instance. Two tables with the same name:
//
//  inet   – the host's view (routed traffic). input: a sandbox may only answer connections the host
//           opened, so no host service is reachable, whatever address it listens on. forward: never to
//           link-local (cloud metadata) or the configured deny list, never bridge→bridge; a sandbox with egress
//           rules of its own goes through its chain (@egress verdict map, egress-ruleset.ts), any other only
//           with its address in @internet. postrouting: masquerade @internet behind the host's address.
//           Host-side services for sandboxes, on the gateway address only: DNS (53, Burrow's resolver), and what
//           the `redirects` chain (prerouting, DNAT) sends there — host services (gateway:port → gateway:hostPort)
//           and, for @proxied sandboxes (rules with domains, or proxied), TCP 80/443 to the egress proxy's listeners. Only
//           DNAT'ed connections are accepted there, so a sandbox cannot reach those listeners any other way.
//           @proxied sandboxes' UDP 443 (QUIC) is dropped, so clients fall back to TCP, which the proxy judges.
//           Limits (egress-limits.ts, when configured): chains of their own at prerouting and postrouting with
//           per-address meters on sandbox-opened connections — new TCP connections per second and bytes each way.
//  bridge – the L2 view (traffic between bridge ports, which routing never sees). Each port may only send
//           with the MAC and IP it was given (@bound), so a sandbox cannot borrow an allowed address or
//           poison the bridge's MAC table; ports never talk to each other (ARP included); and a port
//           only receives frames addressed to it or broadcast/multicast, so unknown-unicast flooding
//           cannot leak another sandbox's traffic.
//
// setup() runs the script with `add` + `flush chain`, in one nft transaction: re-running it replaces the
// rules but keeps set elements, so a restarted orchestrator does not cut off running sandboxes.
import type { EgressRules } from "./egress-rules.js";
import { clearEgressScript, EGRESS_MAP, egressScript, INSPECT_DNAT_CHAIN, INSPECT_MAP, PROXIED_SET, TUNNELED_SET } from "./egress-ruleset.js";
import { egressLimitsScript, type EgressLimitRates } from "./egress-limits.js";
import { directDeclarations, directForwardRules, directMasqueradeRule, directRedirectRule, directReplyResetRule } from "./direct-ruleset.js";
import type { NetworkNames } from "./names.js";

export interface RulesetOptions {
  names: NetworkNames;
  /** The sandboxes' gateway (the bridge's address), where the resolver, the egress proxy and host services listen. */
  gateway: string;
  /** Destinations sandboxes with internet access still may not reach (169.254.0.0/16 is always in). */
  denyDestinations: readonly string[];
  /** Per-sandbox egress limits; none when absent. */
  limits?: EgressLimitRates | undefined;
}

/** Name of the nat chain holding the DNAT rules of host services and the egress proxy (redirectScript). */
export const REDIRECTS_CHAIN = "redirects";

export function setupScript({ names, gateway, denyDestinations, limits }: RulesetOptions): string {
  const t = names.table;
  const br = JSON.stringify(names.bridge);
  const ports = JSON.stringify(`${names.vethPrefix}*`);
  const deny = ["169.254.0.0/16", ...denyDestinations].join(", ");
  return `
add table inet ${t}
add set inet ${t} internet { type ipv4_addr; }
add map inet ${t} ${EGRESS_MAP} { type ipv4_addr : verdict; }
add set inet ${t} ${PROXIED_SET} { type ipv4_addr; }
add set inet ${t} ${TUNNELED_SET} { type ipv4_addr; }
add map inet ${t} ${INSPECT_MAP} { type ipv4_addr : verdict; }
add chain inet ${t} ${INSPECT_DNAT_CHAIN}
add chain inet ${t} ${REDIRECTS_CHAIN}
${directDeclarations(names)}
add chain inet ${t} prerouting { type nat hook prerouting priority -100; policy accept; }
flush chain inet ${t} prerouting
add rule inet ${t} prerouting iifname ${br} jump ${REDIRECTS_CHAIN}
add chain inet ${t} input { type filter hook input priority -10; policy accept; }
flush chain inet ${t} input
add rule inet ${t} input iifname ${br} ct state established,related accept
add rule inet ${t} input iifname ${br} ip daddr ${gateway} meta l4proto { tcp, udp } th dport 53 accept
add rule inet ${t} input iifname ${br} ip daddr ${gateway} ct status dnat accept
add rule inet ${t} input iifname ${br} counter drop
add chain inet ${t} forward { type filter hook forward priority -10; policy accept; }
flush chain inet ${t} forward
add rule inet ${t} forward iifname ${br} oifname ${br} counter drop
${directReplyResetRule(names)}
add rule inet ${t} forward oifname ${br} ct state established,related accept
add rule inet ${t} forward oifname ${br} counter drop
add rule inet ${t} forward iifname ${br} ip daddr { ${deny} } counter drop
add rule inet ${t} forward iifname ${br} ip saddr @${PROXIED_SET} udp dport 443 counter drop
${directForwardRules(names, PROXIED_SET).join("\n")}
add rule inet ${t} forward iifname ${br} ip saddr vmap @${EGRESS_MAP}
add rule inet ${t} forward iifname ${br} ip saddr @internet accept
add rule inet ${t} forward iifname ${br} counter drop
add chain inet ${t} postrouting { type nat hook postrouting priority 100; policy accept; }
flush chain inet ${t} postrouting
add rule inet ${t} postrouting oifname != ${br} ip saddr @internet masquerade
${directMasqueradeRule(names)}
${egressLimitsScript(names, limits ?? {})}add table bridge ${t}
add set bridge ${t} bound { type ifname . ether_addr . ipv4_addr; }
add set bridge ${t} macs { type ifname . ether_addr; }
add chain bridge ${t} prerouting { type filter hook prerouting priority -200; policy accept; }
flush chain bridge ${t} prerouting
add rule bridge ${t} prerouting iifname ${ports} ether type ip iifname . ether saddr . ip saddr @bound accept
add rule bridge ${t} prerouting iifname ${ports} ether type arp iifname . ether saddr . arp saddr ip @bound iifname . arp saddr ether . arp saddr ip @bound accept
add rule bridge ${t} prerouting iifname ${ports} counter drop
add chain bridge ${t} forward { type filter hook forward priority -200; policy accept; }
flush chain bridge ${t} forward
add rule bridge ${t} forward iifname ${ports} counter drop
add rule bridge ${t} forward oifname ${ports} counter drop
add chain bridge ${t} output { type filter hook output priority -200; policy accept; }
flush chain bridge ${t} output
add rule bridge ${t} output oifname ${ports} ether daddr & 01:00:00:00:00:00 == 01:00:00:00:00:00 accept
add rule bridge ${t} output oifname ${ports} oifname . ether daddr @macs accept
add rule bridge ${t} output oifname ${ports} counter drop
`;
}

/** A host service as sandboxes reach it: `port` of the gateway, served on the host at `hostPort`. */
export interface HostServicePorts {
  port: number;
  hostPort: number;
}

/**
 * The redirects chain's rules, replacing the old ones in one transaction: host services for every sandbox, then the
 * egress proxy's listeners (original port → listener port) for @proxied sandboxes, then the ports sandboxes' inspect
 * chains name (@inspect) to the any-port listener `inspectPort`, then every other TCP port of @tunneled sandboxes
 * (but the gateway's) to the catch-all listener `tunnelPort`.
 */
export function redirectScript(
  names: NetworkNames,
  gateway: string,
  services: readonly HostServicePorts[],
  proxy: ReadonlyMap<number, number>,
  tunnelPort?: number,
  inspectPort?: number,
): string {
  const t = names.table;
  const lines = [`flush chain inet ${t} ${REDIRECTS_CHAIN}`, `flush chain inet ${t} ${INSPECT_DNAT_CHAIN}`];
  for (const s of services) lines.push(`add rule inet ${t} ${REDIRECTS_CHAIN} ip daddr ${gateway} tcp dport ${s.port} dnat ip to ${gateway}:${s.hostPort}`);
  if (proxy.size > 0) lines.push(directRedirectRule(names, PROXIED_SET));
  for (const [port, listener] of proxy) {
    lines.push(`add rule inet ${t} ${REDIRECTS_CHAIN} ip saddr @${PROXIED_SET} tcp dport ${port} dnat ip to ${gateway}:${listener}`);
  }
  if (inspectPort !== undefined) {
    lines.push(`add rule inet ${t} ${INSPECT_DNAT_CHAIN} meta l4proto tcp dnat ip to ${gateway}:${inspectPort}`);
    lines.push(`add rule inet ${t} ${REDIRECTS_CHAIN} ip daddr != ${gateway} meta l4proto tcp ip saddr vmap @${INSPECT_MAP}`);
  }
  if (tunnelPort !== undefined) {
    lines.push(`add rule inet ${t} ${REDIRECTS_CHAIN} ip saddr @${TUNNELED_SET} ip daddr != ${gateway} meta l4proto tcp dnat ip to ${gateway}:${tunnelPort}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Delete both tables; `add` first so that deleting a table that is already gone is not an error. */
export function teardownScript(names: NetworkNames): string {
  return `
add table inet ${names.table}
delete table inet ${names.table}
add table bridge ${names.table}
delete table bridge ${names.table}
`;
}

export interface PortBinding {
  hostVeth: string;
  mac: string;
  ip: string;
}

/** Bind a port to its MAC and IP, and set its egress (internet switch and rules, egress-ruleset.ts). `add` then
 *  `delete` is the idempotent way to remove an element that may be absent (nft 1.0.6 has no `destroy`). */
export function bindScript(names: NetworkNames, p: PortBinding, internet: boolean, egress?: EgressRules): string {
  const t = names.table;
  const port = JSON.stringify(p.hostVeth);
  return `
add element bridge ${t} bound { ${port} . ${p.mac} . ${p.ip} }
add element bridge ${t} macs { ${port} . ${p.mac} }
${egressScript(names, p.ip, internet, egress)}`;
}

export function unbindScript(names: NetworkNames, p: PortBinding): string {
  const t = names.table;
  const port = JSON.stringify(p.hostVeth);
  return `
add element bridge ${t} bound { ${port} . ${p.mac} . ${p.ip} }
delete element bridge ${t} bound { ${port} . ${p.mac} . ${p.ip} }
add element bridge ${t} macs { ${port} . ${p.mac} }
delete element bridge ${t} macs { ${port} . ${p.mac} }
${clearEgressScript(names, p.ip)}`;
}
