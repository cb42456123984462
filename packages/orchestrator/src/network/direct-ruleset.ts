// The direct path of sandboxes with domain rules (see egress/direct-path.ts): the nftables side.
//
// When Burrow's resolver gives such a sandbox an address for a name its rules allow, the pair (sandbox, address)
// goes into @direct for as long as the answer is kept. A new TCP connection to 80/443 of such a pair is not DNAT'ed
// to the egress proxy: the kernel forwards it (masqueraded), its conntrack entry marked DIRECT and given short
// TIME_WAIT/CLOSE timeouts (so that its end, with the byte counters, is reported within seconds). Until its first
// payload has been judged, every packet the sandbox sends on it is marked QUEUE and an iptables-nft rule (the
// kernel has xt NFQUEUE but no nft `queue`) hands it to the egress judge's queue; the judge answers with a packet
// mark — ALLOW, DENY (the packet rewritten into a reset to the destination) or PASS (no payload: the handshake's
// last ACK) — which the forward chain turns into the conntrack mark. Judged connections never see the queue again.
//
// Fail closed: a DIRECT connection's packet that did not come through the judge (no reader on the queue, the
// iptables rule gone) has none of the verdict marks and is dropped. Stale @direct elements (rules changed, an
// address reused) only send connections to the judge, which asks for a verdict with the sandbox's current rules.
// Sandboxes cannot forge the marks: a packet's mark is cleared when it crosses from the sandbox's namespace.
import type { NetworkNames } from "./names.js";

/** Packet and conntrack mark bits of the direct path (the judge, native/relay/judge.h, uses the same values). */
export const DIRECT_MARKS = {
  /** Packet: send to the judge's queue. Conntrack: a direct connection. */
  queue: 0x10000000,
  direct: 0x10000000,
  /** Packet (the judge's verdict) and conntrack (the connection's): its name is allowed. */
  allowed: 0x20000000,
  /** Packet (the judge's verdict) and conntrack (the connection's): refused. */
  denied: 0x40000000,
  /** Packet: no payload, passed unjudged. */
  pass: 0x80000000,
} as const;

/** The set of (sandbox address . destination address) pairs whose TCP 80/443 is forwarded directly. */
export const DIRECT_SET = "direct";
/** The conntrack timeout policy of direct connections. */
export const DIRECT_TIMEOUT = "direct_tcp";
/** The chain (forward, before iptables' mangle) that marks packets of unjudged direct connections for the queue. */
export const DIRECT_QUEUE_CHAIN = "direct_queue";
/**
 * The chain that logs the FIN and RST packets of allowed direct connections to the judge's NFLOG group (its number
 * known once the judge has bound it: directEndsScript), so that it reads their byte counts as they close.
 */
export const DIRECT_ENDS_CHAIN = "direct_ends";
/** Ports whose connections may go direct: the ones the proxy reads a name on. */
export const DIRECT_PORTS = [80, 443] as const;

const hex = (n: number) => `0x${n.toString(16).padStart(8, "0")}`;
const M = {
  queue: hex(DIRECT_MARKS.queue),
  direct: hex(DIRECT_MARKS.direct),
  allowed: hex(DIRECT_MARKS.allowed),
  denied: hex(DIRECT_MARKS.denied),
  pass: hex(DIRECT_MARKS.pass),
  judged: hex(DIRECT_MARKS.direct | DIRECT_MARKS.allowed | DIRECT_MARKS.denied),
  directAllowed: hex(DIRECT_MARKS.direct | DIRECT_MARKS.allowed),
};

/** Declarations of setupScript: the set, the timeout policy and the queue-marking chain (refilled). */
export function directDeclarations(names: NetworkNames): string {
  const t = names.table;
  const br = JSON.stringify(names.bridge);
  return `add set inet ${t} ${DIRECT_SET} { type ipv4_addr . ipv4_addr; flags timeout; }
add ct timeout inet ${t} ${DIRECT_TIMEOUT} { protocol tcp; l3proto ip; policy = { time_wait: 1, close: 10 }; }
add chain inet ${t} ${DIRECT_ENDS_CHAIN}
add chain inet ${t} ${DIRECT_QUEUE_CHAIN} { type filter hook forward priority -200; policy accept; }
flush chain inet ${t} ${DIRECT_QUEUE_CHAIN}
${noPayloadPassRules(t, br).join("\n")}
add rule inet ${t} ${DIRECT_QUEUE_CHAIN} iifname ${br} ct mark & ${M.judged} == ${M.direct} meta mark set meta mark | ${M.queue}
`;
}

/**
 * A packet without payload (the handshake's last ACK, window updates) passes unjudged without a trip through the
 * queue: a new connection then pays one judge round trip (its first payload), not two. No payload: the IPv4 total
 * length is the headers' (a 20-byte IP header, then each TCP data offset). One rule per offset: nft 1.0.6 accepts
 * a set of raw-payload concatenations but cannot list it back.
 */
function noPayloadPassRules(t: string, br: string): string[] {
  const rules: string[] = [];
  for (let doff = 5; doff <= 15; doff++) {
    rules.push(
      `add rule inet ${t} ${DIRECT_QUEUE_CHAIN} iifname ${br} ct mark & ${M.judged} == ${M.direct} ip hdrlength 5 @th,96,4 ${doff} ip length ${20 + doff * 4} meta mark set meta mark | ${M.pass} return`,
    );
  }
  return rules;
}

/**
 * The forward chain's rules for direct connections, after the deny list and before the sandbox's own chain: the
 * judge's verdicts, judged connections, and new connections of @direct pairs.
 */
export function directForwardRules(names: NetworkNames, proxiedSet: string): string[] {
  const t = names.table;
  const br = JSON.stringify(names.bridge);
  const rule = (body: string) => `add rule inet ${t} forward iifname ${br} ${body}`;
  return [
    rule(`ct mark & ${M.directAllowed} == ${M.directAllowed} tcp flags & (fin | rst) != 0 jump ${DIRECT_ENDS_CHAIN}`),
    // The judge's reset to the destination goes out; the sandbox's side is reset by the next rule from then on.
    rule(`meta mark & ${M.denied} == ${M.denied} ct mark set ct mark | ${M.denied} accept`),
    rule(`ct mark & ${M.denied} == ${M.denied} reject with tcp reset`),
    rule(`meta mark & ${M.allowed} == ${M.allowed} ct mark set ct mark | ${M.allowed} accept`),
    rule(`ct mark & ${M.directAllowed} == ${M.directAllowed} accept`),
    rule(`ct mark & ${M.judged} == ${M.direct} meta mark & ${M.pass} == ${M.pass} accept`),
    rule(`ct mark & ${M.direct} == ${M.direct} counter drop`),
    rule(`ip saddr @${proxiedSet} ${directSyn()} ct state new ct mark set ct mark | ${M.direct} ct timeout set "${DIRECT_TIMEOUT}" accept`),
  ];
}

/** The forward chain's rule, before replies are accepted, for a destination's reset of an allowed direct connection. */
export function directReplyResetRule(names: NetworkNames): string {
  return `add rule inet ${names.table} forward oifname ${JSON.stringify(names.bridge)} ct mark & ${M.directAllowed} == ${M.directAllowed} tcp flags & rst != 0 jump ${DIRECT_ENDS_CHAIN}`;
}

/** The ends chain's rule, logging to the judge's group (the number it bound, the same as its queue's). */
export function directEndsScript(names: NetworkNames, group: number): string {
  const t = names.table;
  return `flush chain inet ${t} ${DIRECT_ENDS_CHAIN}\nadd rule inet ${t} ${DIRECT_ENDS_CHAIN} log group ${group}\n`;
}

/** The redirects chain's rule that keeps @direct pairs' connections from the egress proxy's DNAT. */
export function directRedirectRule(names: NetworkNames, proxiedSet: string): string {
  return `add rule inet ${names.table} redirects ip saddr @${proxiedSet} ${directSyn()} return`;
}

/**
 * A connection's first packet to a @direct pair on 80/443, without data: a SYN carrying data (TCP Fast Open) would
 * reach the destination before the judge reads it, so such a SYN goes to the proxy. 80 bytes are an IPv4 header and
 * a TCP header with the most options it can have.
 */
function directSyn(): string {
  return `ip saddr . ip daddr @${DIRECT_SET} tcp dport { ${DIRECT_PORTS.join(", ")} } ip length <= 80`;
}

/** Direct connections leave masqueraded, whatever the sandbox's internet switch (their names are allowed). */
export function directMasqueradeRule(names: NetworkNames): string {
  return `add rule inet ${names.table} postrouting oifname != ${JSON.stringify(names.bridge)} ct mark & ${M.direct} == ${M.direct} masquerade`;
}

/** Add (or refresh) pairs for `timeoutS` seconds: `add` then `delete` then `add` restarts an element's timeout. */
export function directAddLines(names: NetworkNames, sandboxIp: string, destinations: readonly string[], timeoutS: number): string[] {
  const t = names.table;
  return destinations.flatMap((d) => [
    `add element inet ${t} ${DIRECT_SET} { ${sandboxIp} . ${d} }`,
    `delete element inet ${t} ${DIRECT_SET} { ${sandboxIp} . ${d} }`,
    `add element inet ${t} ${DIRECT_SET} { ${sandboxIp} . ${d} timeout ${Math.max(1, Math.round(timeoutS))}s }`,
  ]);
}

/** Remove pairs, whether or not they are still there (expired ones are gone already). */
export function directDropLines(names: NetworkNames, sandboxIp: string, destinations: Iterable<string>): string[] {
  const t = names.table;
  return [...destinations].flatMap((d) => [
    `add element inet ${t} ${DIRECT_SET} { ${sandboxIp} . ${d} timeout 1s }`,
    `delete element inet ${t} ${DIRECT_SET} { ${sandboxIp} . ${d} }`,
  ]);
}
