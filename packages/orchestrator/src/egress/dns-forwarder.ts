// Burrow's resolver's way out: questions forwarded over UDP to the upstream servers in turn (a fresh socket, so a
// fresh random source port, per query), answers cached for their smallest TTL (at most 5 minutes; a TTL of 0 is not
// cached, and neither are failures), so that a name answered differently each time is asked each time.
import { createSocket } from "node:dgram";
import { readFileSync } from "node:fs";
import { isIPv4 } from "node:net";
import * as dnsPacket from "dns-packet";

export interface Upstream {
  host: string;
  port: number;
}

export interface ForwardedAnswer {
  /** DNS RCODE (0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN …). */
  rcode: number;
  answers: dnsPacket.Answer[];
  authorities: dnsPacket.Answer[];
  truncated: boolean;
}

const MAX_TTL_S = 300;
const TIMEOUT_MS = 2000;
const MAX_CACHED = 10_000;

/** `host[:port]` entries, comma-separated (BURROW_DNS_UPSTREAM); IPv4 only. Throws naming a bad entry. */
export function parseUpstreams(spec: string): Upstream[] {
  return spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const [host, port, ...rest] = entry.split(":");
      const p = port === undefined ? 53 : Number(port);
      if (host === undefined || !isIPv4(host) || rest.length > 0 || !Number.isInteger(p) || p < 1 || p > 65535) {
        throw new Error(`DNS upstream '${entry}' is not an IPv4 address with an optional :port`);
      }
      return { host, port: p };
    });
}

/** The host's own name servers (IPv4 ones; loopback included, since the resolver runs on the host). */
export function hostUpstreams(resolvConf = "/etc/resolv.conf"): Upstream[] {
  let text = "";
  try {
    text = readFileSync(resolvConf, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
    .filter((s): s is string => s !== undefined && isIPv4(s))
    .map((host) => ({ host, port: 53 }));
}

export class DnsForwarder {
  readonly #upstreams: readonly Upstream[];
  readonly #cache = new Map<string, { expires: number; answer: ForwardedAnswer }>();
  /** Concurrent identical questions share one upstream query. */
  readonly #inflight = new Map<string, Promise<ForwardedAnswer>>();

  constructor(upstreams: readonly Upstream[]) {
    this.#upstreams = upstreams;
  }

  async ask(name: string, type: dnsPacket.RecordType): Promise<ForwardedAnswer> {
    const key = `${type} ${name.toLowerCase()}`;
    const cached = this.#cache.get(key);
    if (cached && cached.expires > Date.now()) return cached.answer;
    if (cached) this.#cache.delete(key);
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = this.#forward(name, type).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    const answer = await pending;
    const ttl = Math.min(MAX_TTL_S, ...answer.answers.map((a) => ("ttl" in a && typeof a.ttl === "number" ? a.ttl : 0)));
    if (answer.rcode === 0 && answer.answers.length > 0 && ttl > 0 && !answer.truncated) {
      if (this.#cache.size >= MAX_CACHED) this.#cache.delete(this.#cache.keys().next().value!);
      this.#cache.set(key, { expires: Date.now() + ttl * 1000, answer });
    }
    return answer;
  }

  /** The IPv4 addresses a name has now (empty when it has none or nothing answered). */
  async resolve4(name: string): Promise<string[]> {
    const answer = await this.ask(name, "A");
    return answer.answers.flatMap((a) => (a.type === "A" && typeof a.data === "string" ? [a.data] : []));
  }

  // Bounded by the upstreams' timeouts rather than a caller's signal: concurrent callers share the query.
  async #forward(name: string, type: dnsPacket.RecordType): Promise<ForwardedAnswer> {
    for (const upstream of this.#upstreams) {
      try {
        return await queryUdp(upstream, name, type);
      } catch {
        // The next upstream, if any.
      }
    }
    return { rcode: 2, answers: [], authorities: [], truncated: false };
  }
}

function queryUdp(upstream: Upstream, name: string, type: dnsPacket.RecordType): Promise<ForwardedAnswer> {
  const id = Math.floor(Math.random() * 65536);
  const query = dnsPacket.encode({ type: "query", id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name, class: "IN" }] });
  const socket = createSocket("udp4");
  return new Promise<ForwardedAnswer>((resolve, reject) => {
    const done = (err: Error | undefined, answer?: ForwardedAnswer) => {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(answer!);
    };
    const timer = setTimeout(() => done(new Error(`DNS upstream ${upstream.host}:${upstream.port} did not answer`)), TIMEOUT_MS);
    socket.on("error", (err) => done(err));
    socket.on("message", (msg, rinfo) => {
      if (rinfo.address !== upstream.host || rinfo.port !== upstream.port) return;
      let packet: dnsPacket.DecodedPacket;
      try {
        packet = dnsPacket.decode(msg);
      } catch {
        return;
      }
      const q = packet.questions?.[0];
      // Only the answer to this question (id and name) counts: anything else is a stray or a spoof.
      if (packet.id !== id || q?.name.toLowerCase() !== name.toLowerCase() || q.type !== type) return;
      done(undefined, {
        rcode: (packet.flags ?? 0) & 15,
        answers: packet.answers ?? [],
        authorities: packet.authorities ?? [],
        truncated: packet.flag_tc,
      });
    });
    socket.send(query, upstream.port, upstream.host);
  });
}
