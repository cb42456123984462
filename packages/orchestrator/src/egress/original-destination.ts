// Where a DNAT'ed connection was going before nftables sent it to one of our listeners: the original tuple of its
// conntrack entry. Node has no SO_ORIGINAL_DST, but the kernel lists every tracked connection in
// /proc/net/nf_conntrack; the entry whose original source is the client's address and port and whose reply source
// is our listener is this connection. Used for the catch-all listener that takes every TCP port of a sandbox whose
// egress goes through a user's proxy, where one listener per original port (as for 80/443) is not possible.
import { readFile } from "node:fs/promises";

const CONNTRACK = "/proc/net/nf_conntrack";

export interface Destination {
  ip: string;
  port: number;
}

/**
 * The original destination of the TCP connection from `client` that arrived at `listener`, or undefined when the
 * kernel lists none (not DNAT'ed, or conntrack's procfs missing).
 */
export async function originalDestination(client: Destination, listener: Destination, file = CONNTRACK): Promise<Destination | undefined> {
  let text: string;
  try {
    text = await readFile(file, "latin1");
  } catch {
    return undefined;
  }
  // Cheap substring tests first: the table can hold thousands of entries.
  const source = `src=${client.ip} `;
  const sport = ` sport=${client.port} `;
  for (const line of text.split("\n")) {
    if (!line.startsWith("ipv4") || !line.includes(" tcp ") || !line.includes(source) || !line.includes(sport)) continue;
    const m = /src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+) .*?src=(\S+) dst=\S+ sport=(\d+) dport=(\d+)/.exec(line);
    if (!m || m[1] !== client.ip || Number(m[3]) !== client.port) continue;
    if (m[5] !== listener.ip || Number(m[6]) !== listener.port || Number(m[7]) !== client.port) continue;
    return { ip: m[2]!, port: Number(m[4]) };
  }
  return undefined;
}
