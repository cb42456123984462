// Burrow's resolver as sandboxes see it: UDP and TCP port 53 on their gateway address. A question is answered by who
// asks (the source address names the sandbox): host service names with the gateway; names the sandbox's rules deny
// with NXDOMAIN, never forwarded, and an Extended DNS Error (RFC 8914, "Blocked") naming the rule when the query
// carries EDNS; everything else forwarded (dns-forwarder.ts). An address that is no sandbox's gets REFUSED.
import { createSocket, type Socket } from "node:dgram";
import { createServer, type Server, type Socket as TcpSocket } from "node:net";
import * as dnsPacket from "dns-packet";
import type { DnsForwarder } from "./dns-forwarder.js";
import { canonicalName, nameResolves, type SandboxPolicy } from "./egress-policy.js";

export interface DnsServerOptions {
  gateway: string;
  /** @default 53 */
  port?: number;
  forwarder: DnsForwarder;
  /** The policy of the sandbox at an address; undefined for an address that is no sandbox's. */
  policyOf: (ip: string) => SandboxPolicy | undefined;
  /** Host service names (lower case) answered with the gateway. */
  hostNames: () => ReadonlySet<string>;
  /** A name refused (NXDOMAIN) for a sandbox: for the audit. */
  onRefused?: (ip: string, name: string, rule: string) => void;
  /**
   * IPv4 addresses forwarded to a sandbox for a name (with the answer's smallest TTL): for the egress proxy and the
   * direct path. A promise returned is waited for (at most ANSWER_WAIT_MS) before the answer goes out, so that what
   * it sets up for the addresses is in place when the sandbox connects.
   */
  onAnswered?: (ip: string, name: string, addresses: string[], ttlS: number) => void | Promise<void>;
}

const NOERROR = 0;
const SERVFAIL = 2;
const NXDOMAIN = 3;
const REFUSED = 5;
const EDE_OPTION = 15;
const EDE_BLOCKED = 15;
const HOST_TTL_S = 60;
/** How long an answer waits for what onAnswered sets up; after that it goes out anyway (the proxy takes over). */
const ANSWER_WAIT_MS = 1_000;

function waitAtMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

export interface DnsServer {
  close(): Promise<void>;
}

export async function startDnsServer(opts: DnsServerOptions): Promise<DnsServer> {
  const port = opts.port ?? 53;
  const udp: Socket = createSocket({ type: "udp4", reuseAddr: true });
  udp.on("message", (msg, rinfo) => {
    void answer(opts, msg, rinfo.address, "udp").then((reply) => reply && udp.send(reply, rinfo.port, rinfo.address));
  });
  udp.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    udp.once("error", reject);
    udp.bind(port, opts.gateway, () => {
      udp.off("error", reject);
      resolve();
    });
  });
  const tcp: Server = createServer((socket) => serveTcp(opts, socket));
  try {
    await new Promise<void>((resolve, reject) => {
      tcp.once("error", reject);
      tcp.listen(port, opts.gateway, () => {
        tcp.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    udp.close();
    throw err;
  }
  return {
    close: async () => {
      await Promise.all([new Promise<void>((resolve) => udp.close(() => resolve())), new Promise<void>((resolve) => tcp.close(() => resolve()))]);
    },
  };
}

/** DNS over TCP: each message behind a 2-byte length. */
function serveTcp(opts: DnsServerOptions, socket: TcpSocket): void {
  let buffered = Buffer.alloc(0);
  socket.setTimeout(10_000, () => socket.destroy());
  socket.on("error", () => undefined);
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 2) {
      const length = buffered.readUInt16BE(0);
      if (buffered.length < 2 + length) break;
      const msg = buffered.subarray(2, 2 + length);
      buffered = buffered.subarray(2 + length);
      void answer(opts, msg, socket.remoteAddress ?? "", "tcp").then((reply) => {
        if (!reply || socket.destroyed) return;
        const framed = Buffer.alloc(2 + reply.length);
        framed.writeUInt16BE(reply.length, 0);
        reply.copy(framed, 2);
        socket.write(framed);
      });
    }
    if (buffered.length > 65537) socket.destroy();
  });
}

/** The reply to one message, or undefined for something that is no query (dropped). */
async function answer(opts: DnsServerOptions, msg: Buffer, from: string, transport: "udp" | "tcp"): Promise<Buffer | undefined> {
  let query: dnsPacket.DecodedPacket;
  try {
    query = dnsPacket.decode(msg);
  } catch {
    return undefined;
  }
  if (query.type !== "query") return undefined;
  const question = query.questions?.[0];
  const opt = (query.additionals ?? []).find((a) => a.type === "OPT") as { udpPayloadSize?: number } | undefined;
  const edns = opt !== undefined;
  // Over UDP, what the client said it takes (EDNS), at most 1232 bytes (no fragments), else DNS's classic 512.
  const maxSize = transport === "tcp" ? 65535 : Math.max(512, Math.min(1232, opt?.udpPayloadSize ?? 512));
  const reply = (rcode: number, parts: { answers?: dnsPacket.Answer[]; authorities?: dnsPacket.Answer[]; blocked?: string; truncated?: boolean } = {}) => {
    const flags = (query.flags ?? 0) & dnsPacket.RECURSION_DESIRED;
    const packet: dnsPacket.Packet = {
      type: "response",
      id: query.id ?? 0,
      flags: flags | dnsPacket.RECURSION_AVAILABLE | (parts.truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | rcode,
      questions: question ? [question] : [],
      answers: parts.answers ?? [],
      authorities: parts.authorities ?? [],
      additionals: edns ? [optRecord(parts.blocked)] : [],
    };
    let encoded = dnsPacket.encode(packet);
    if (encoded.length > maxSize) {
      encoded = dnsPacket.encode({ ...packet, answers: [], authorities: [], flags: packet.flags! | dnsPacket.TRUNCATED_RESPONSE });
    }
    return encoded;
  };
  const policy = opts.policyOf(from);
  if (!policy) return reply(REFUSED);
  if (!question || (query.questions?.length ?? 0) !== 1) return reply(REFUSED);
  const name = canonicalName(question.name);
  if (opts.hostNames().has(name)) {
    const answers: dnsPacket.Answer[] = question.type === "A" ? [{ type: "A", name: question.name, ttl: HOST_TTL_S, class: "IN", data: opts.gateway }] : [];
    return reply(NOERROR, { answers });
  }
  const verdict = nameResolves(policy, name);
  if (!verdict.allowed) {
    opts.onRefused?.(from, name, verdict.rule);
    return reply(NXDOMAIN, { blocked: `denied by network rule ${verdict.rule}` });
  }
  try {
    const forwarded = await opts.forwarder.ask(question.name, question.type);
    if (opts.onAnswered && question.type === "A") {
      const a = forwarded.answers.filter((r): r is dnsPacket.StringAnswer => r.type === "A");
      const ready = a.length > 0 ? opts.onAnswered(from, name, a.map((r) => r.data), Math.min(...a.map((r) => r.ttl ?? 0))) : undefined;
      if (ready) await waitAtMost(ready, ANSWER_WAIT_MS);
    }
    return reply(forwarded.rcode, { answers: forwarded.answers, authorities: forwarded.authorities, truncated: forwarded.truncated });
  } catch {
    return reply(SERVFAIL);
  }
}

/** EDNS's OPT record, with an Extended DNS Error saying why a name was blocked. */
function optRecord(blocked: string | undefined): dnsPacket.Answer {
  const options: { code: number; data: Buffer }[] = [];
  if (blocked !== undefined) {
    const text = Buffer.from(blocked, "utf8");
    const data = Buffer.alloc(2 + text.length);
    data.writeUInt16BE(EDE_BLOCKED, 0);
    text.copy(data, 2);
    options.push({ code: EDE_OPTION, data });
  }
  return { type: "OPT", name: ".", udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options } as unknown as dnsPacket.Answer;
}
