// Services of the test's on the host's address on a cluster LAN, for sandboxes whose connections leave through their
// node's namespace: a DNS server (UDP, the nodes' resolver upstream via BURROW_DNS_UPSTREAM) answering A queries for
// the given .test names, NXDOMAIN for the rest, and HTTP on port 80 answering "hello <the address that connected>".
// Nothing listens anywhere but on that address; close() stops both.
import { createSocket } from "node:dgram";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as dnsPacket from "dns-packet";

export interface LanServices {
  /** `host:port` of the DNS server, as BURROW_DNS_UPSTREAM takes it. */
  dnsUpstream: string;
  /** The names asked, in order. */
  queries(): string[];
  close(): Promise<void>;
}

export async function startLanServices(address: string, names: Record<string, string>): Promise<LanServices> {
  const asked: string[] = [];
  const dns = createSocket("udp4");
  dns.on("message", (message, peer) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    asked.push(name);
    const found = names[name];
    const answers: dnsPacket.Answer[] = found !== undefined && question.type === "A" ? [{ type: "A", name: question.name, ttl: 0, data: found }] : [];
    const flags = dnsPacket.RECURSION_AVAILABLE | (found === undefined ? 3 : 0);
    dns.send(dnsPacket.encode({ type: "response", id: query.id ?? 0, flags, questions: [question], answers }), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => dns.bind(0, address, resolve));
  const http = createServer((req, res) => res.end(`hello ${req.socket.remoteAddress}`));
  try {
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(80, address, resolve);
    });
  } catch (err) {
    dns.close();
    throw err;
  }
  return {
    dnsUpstream: `${address}:${(dns.address() as AddressInfo).port}`,
    queries: () => [...asked],
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
      await new Promise<void>((resolve) => dns.close(resolve));
    },
  };
}
