// GET over HTTP(S) for registry traffic, with the guards a server pulling on behalf of API clients needs:
// addresses checked at connect time (no loopback, private or link-local targets unless the operator trusts the
// host), redirects followed by hand (credentials never follow to another host), timeouts, and cancellation.
import { request as httpRequest, type IncomingMessage, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "../../builder/template-build-error.js";

/** Addresses a pull may not reach unless its host is trusted (IANA special-purpose ranges). */
const SPECIAL_RANGES = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24],
  ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) SPECIAL_RANGES.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128], ["::1", 128], ["::ffff:0:0", 96], ["64:ff9b::", 96], ["100::", 64], ["2001:db8::", 32], ["fc00::", 7],
  ["fe80::", 10], ["ff00::", 8],
] as const) SPECIAL_RANGES.addSubnet(net, prefix, "ipv6");

export function isSpecialAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return SPECIAL_RANGES.check(address, family === 4 ? "ipv4" : "ipv6");
}

export interface RegistryGetOptions {
  headers?: Record<string, string>;
  /** May this host (`host[:port]`) resolve to loopback/private addresses? */
  trusted: (host: string) => boolean;
  signal?: AbortSignal | undefined;
  /** Longest wait for the response head. @default 30000 */
  headTimeoutMs?: number;
  /** Longest silence while a body streams. @default 60000 */
  idleTimeoutMs?: number;
}

export interface RegistryResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The final URL after redirects. */
  url: URL;
  body: IncomingMessage;
}

const MAX_REDIRECTS = 5;

function guardedLookup(host: string, trusted: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      const usable = trusted ? addresses : addresses.filter((a) => !isSpecialAddress(a.address));
      if (usable.length === 0) {
        const refused = Object.assign(new Error(`registry host ${host} resolves only to loopback, private or reserved addresses; ` +
          "list it in BURROW_INSECURE_REGISTRIES if it is yours"), { code: "EREGISTRYADDRESS" });
        return callback(refused, "", 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      const first = usable[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  };
}

function once(url: URL, opts: RegistryGetOptions, headers: Record<string, string>): Promise<IncomingMessage> {
  const trusted = opts.trusted(url.host);
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(literal) !== 0 && !trusted && isSpecialAddress(literal)) {
    return Promise.reject(
      new TemplateBuildError(Code.InvalidArgument, `registry address ${url.host} is loopback, private or reserved; list it in BURROW_INSECURE_REGISTRIES if it is yours`, { step: "base" }),
    );
  }
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "GET",
      headers: { "user-agent": "burrow", ...headers },
      lookup: guardedLookup(url.host, trusted),
      signal: opts.signal,
      agent: false,
    });
    const headTimer = setTimeout(() => req.destroy(new Error(`no answer from ${url.host} within ${opts.headTimeoutMs ?? 30_000} ms`)), opts.headTimeoutMs ?? 30_000);
    req.on("response", (res) => {
      clearTimeout(headTimer);
      res.setTimeout(opts.idleTimeoutMs ?? 60_000, () => res.destroy(new Error(`download from ${url.host} stalled`)));
      resolve(res);
    });
    req.on("error", (err) => {
      clearTimeout(headTimer);
      reject(err);
    });
    req.end();
  });
}

/** GET `url`, following up to five redirects; Authorization is sent only to the original host. */
export async function registryGet(url: URL, opts: RegistryGetOptions): Promise<RegistryResponse> {
  let current = url;
  let headers = { ...opts.headers };
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (current.protocol !== "https:" && !(current.protocol === "http:" && opts.trusted(current.host))) {
      throw new TemplateBuildError(Code.InvalidArgument, `registry URL ${current.origin} must use https (or be listed in BURROW_INSECURE_REGISTRIES)`, { step: "base" });
    }
    const res = await once(current, opts, headers);
    const location = res.headers.location;
    if (res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400 && location) {
      res.resume();
      const next = new URL(location, current);
      if (next.host !== current.host) {
        const { authorization: _dropped, ...rest } = headers;
        headers = rest;
      }
      current = next;
      continue;
    }
    return { status: res.statusCode ?? 0, headers: res.headers, url: current, body: res };
  }
  throw new TemplateBuildError(Code.FailedPrecondition, `too many redirects from ${url.host}`, { step: "base" });
}

/** Read a (small) body as text, refusing more than `limit` bytes. */
export async function readBody(res: RegistryResponse, limit = 4 * 1024 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      res.body.destroy();
      throw new TemplateBuildError(Code.InvalidArgument, `registry answer from ${res.url.host} is larger than ${limit} bytes`, { step: "base" });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
