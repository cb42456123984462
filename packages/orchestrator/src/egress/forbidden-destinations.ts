// Addresses the egress proxy never connects to, whatever a sandbox's rules say: its connections leave from the
// host, past the forward chain that keeps sandboxes off these (ruleset.ts), so the same limits are applied here —
// the host itself (loopback and every address of its own), link-local (cloud metadata), the sandboxes' subnet, the
// operator's deny list, and addresses that are no unicast destination.
import { networkInterfaces } from "node:os";
import { parseCidr, parseIpv4 } from "../network/ipv4.js";

const ALWAYS: readonly [string, string][] = [
  ["0.0.0.0/8", "no destination"],
  ["127.0.0.0/8", "the host's loopback"],
  ["169.254.0.0/16", "link-local (metadata)"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"],
];

export function forbiddenDestinations(subnet: string, denyDestinations: readonly string[]): (ip: string) => string | undefined {
  const prefixes = [...ALWAYS, [subnet, "the sandboxes' subnet"] as [string, string], ...denyDestinations.map((d) => [d, `denied by the operator (${d})`] as [string, string])].map(
    ([cidr, why]) => ({ prefix: parseCidr(cidr), why }),
  );
  return (ip) => {
    let value: number;
    try {
      value = parseIpv4(ip);
    } catch {
      return "not an IPv4 address";
    }
    for (const { prefix, why } of prefixes) {
      const mask = prefix.length === 0 ? 0 : (~0 << (32 - prefix.length)) >>> 0;
      if (((value & mask) >>> 0) === prefix.network) return why;
    }
    return hostAddresses().has(ip) ? "the host itself" : undefined;
  };
}

const HOST_ADDRESSES_TTL_MS = 2000;
let hostCache: { at: number; addresses: Set<string> } | undefined;

/**
 * The host's IPv4 addresses, read again every 2 s: they change (DHCP, interfaces coming and going), but reading them
 * costs about a millisecond, too much for every connection.
 */
function hostAddresses(): Set<string> {
  const now = Date.now();
  if (!hostCache || now - hostCache.at > HOST_ADDRESSES_TTL_MS) {
    const addresses = new Set<string>();
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4") addresses.add(a.address);
    hostCache = { at: now, addresses };
  }
  return hostCache.addresses;
}
