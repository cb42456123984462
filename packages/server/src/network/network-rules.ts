// E2B's `network.rules`: per destination host, headers the egress proxy sets on the sandbox's requests, with
// `${e2b.secrets.NAME}` placeholders resolved only at egress, so the sandbox never holds the value. Validated here
// (host names, header names as HTTP tokens, values without line breaks, placeholders naming the caller's team's
// secrets) and kept as written; GET answers them with their placeholders, never values.
// Beyond E2B (whose keys are names only, for the web ports): a key may name a port, `api.example.com:8443`; its
// rules apply only to connections to that port, which the egress proxy then takes too (HTTP or TLS, told by the
// first bytes). A key without a port applies to 80 and 443.
import { parseEgressTarget } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import { IDENTITY_TOKENS_UNSUPPORTED } from "./identity-tokens.js";

/** One rule of a host: the headers it sets (name → value with placeholders); `{}` sets none. */
export interface HeaderTransformRule {
  transform?: { headers?: Record<string, string> };
}

/** Host (`api.example.com` or `*.example.com`, lower-case, optionally `:port`) → its rules, in the order given. */
export type NetworkRules = Record<string, HeaderTransformRule[]>;

const MAX_HOSTS = 100;
const MAX_HEADERS = 50;
const MAX_VALUE_LENGTH = 8192;
/** RFC 9110 §5.6.2 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Any `${…}` with the e2b prefix; only secrets are resolvable by Burrow. */
const E2B_PLACEHOLDER = /\$\{(e2b\.[^{}]*)\}/g;
const SECRET_PLACEHOLDER = /^e2b\.secrets\.([^{}\p{Cc}]+)$/u;
const IDENTITY_PLACEHOLDER = /^e2b\.identity\.tokens\./;
/** Headers that describe the connection or the message framing: setting them would break or smuggle requests. */
const RESERVED = new Set(["host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive", "proxy-connection"]);

/** Validated rules (400 naming the first bad host, rule, header or value), or undefined when there are none. */
export function networkRules(body: Record<string, unknown> | undefined | null): NetworkRules | undefined {
  if (body === undefined || body === null) return undefined;
  const hosts = Object.entries(body);
  if (hosts.length === 0) return undefined;
  if (hosts.length > MAX_HOSTS) throw invalid(`network.rules names ${hosts.length} hosts; at most ${MAX_HOSTS}`);
  const out: NetworkRules = {};
  for (const [host, rules] of hosts) {
    const key = ruleHost(host);
    if (!Array.isArray(rules)) throw invalid(`network.rules['${host}'] must be an array of rules`);
    out[key] = [...(out[key] ?? []), ...rules.map((rule, i) => transformRule(rule, `network.rules['${host}'][${i}]`))];
  }
  return out;
}

/** Names of the secrets the rules' placeholders name (as written), deduplicated. */
export function secretNamesOf(rules: NetworkRules): string[] {
  const names = new Set<string>();
  for (const list of Object.values(rules)) {
    for (const rule of list) {
      for (const value of Object.values(rule.transform?.headers ?? {})) {
        for (const m of value.matchAll(E2B_PLACEHOLDER)) names.add(SECRET_PLACEHOLDER.exec(m[1]!)![1]!);
      }
    }
  }
  return [...names];
}

/** 400 naming the first secret the rules name that `exists` does not know. */
export function requireRuleSecrets(rules: NetworkRules | undefined, exists: (name: string) => boolean): void {
  if (!rules) return;
  const missing = secretNamesOf(rules).find((name) => !exists(name));
  if (missing !== undefined) {
    throw new BurrowError(Code.InvalidArgument, `network.rules names the secret '${missing}', which does not exist`, { reason: "unknown_secret" });
  }
}

/** TCP ports a key without one applies to: the web's. */
export const DEFAULT_RULE_PORTS: readonly number[] = [80, 443];

/**
 * The headers a request to `host` on TCP `port` gets, or undefined when no rule names it there. E2B's matching among
 * the keys naming that port (`host:port`), else, on 80 and 443, among the keys without a port: the exact name's
 * rules, else those of the longest wildcard naming it (below its apex only); rule sets of several keys are not
 * merged. Within a host's rules, later ones win.
 */
export function headersFor(rules: NetworkRules | undefined, host: string, port: number): Record<string, string> | undefined {
  if (!rules) return undefined;
  const name = host.toLowerCase().replace(/\.$/, "");
  const match = (suffix: string): string | undefined => {
    const keys = Object.keys(rules).filter((k) => (suffix === "" ? !k.includes(":") : k.endsWith(suffix)));
    const exact = `${name}${suffix}`;
    if (keys.includes(exact)) return exact;
    return keys
      .map((k) => k.slice(0, k.length - suffix.length))
      .filter((h) => h.startsWith("*.") && name.endsWith(h.slice(1)))
      .sort((a, b) => b.length - a.length)
      .map((h) => `${h}${suffix}`)[0];
  };
  const key = match(`:${port}`) ?? (DEFAULT_RULE_PORTS.includes(port) ? match("") : undefined);
  if (key === undefined) return undefined;
  const headers: Record<string, string> = {};
  for (const rule of rules[key]!) Object.assign(headers, rule.transform?.headers ?? {});
  return headers;
}

/** The ports the rules' keys name beyond 80/443 (the egress proxy takes them for the sandbox), sorted. */
export function inspectPortsOf(rules: NetworkRules | undefined): number[] {
  const ports = new Set<number>();
  for (const key of Object.keys(rules ?? {})) {
    const port = /:(\d+)$/.exec(key)?.[1];
    if (port !== undefined && !DEFAULT_RULE_PORTS.includes(Number(port))) ports.add(Number(port));
  }
  return [...ports].sort((a, b) => a - b);
}

function ruleHost(host: string): string {
  const colon = host.lastIndexOf(":");
  const name = colon < 0 ? host : host.slice(0, colon);
  let target;
  try {
    target = parseEgressTarget(name);
  } catch {
    target = undefined;
  }
  if (target?.kind !== "domain") throw invalid(`invalid network.rules host '${host}': expected a domain name or *.domain, optionally with :port`);
  const domain = target.wildcard ? `*.${target.domain}` : target.domain;
  if (colon < 0) return domain;
  const port = host.slice(colon + 1);
  // Digits only, no sign or leading zero: one spelling per port, so two keys cannot name the same port unnoticed.
  if (!/^[1-9]\d{0,4}$/.test(port) || Number(port) > 65535) throw invalid(`invalid port in network.rules host '${host}': expected 1-65535`);
  if (port === "53") throw invalid(`invalid port in network.rules host '${host}': 53 is the resolver's`);
  return `${domain}:${port}`;
}

function transformRule(rule: unknown, where: string): HeaderTransformRule {
  if (typeof rule !== "object" || rule === null || Array.isArray(rule)) throw invalid(`${where} must be an object with a transform`);
  const extra = Object.keys(rule).filter((k) => k !== "transform");
  if (extra.length > 0) throw invalid(`${where} has an unsupported field '${extra[0]}'`);
  const transform = (rule as { transform?: unknown }).transform;
  if (transform === undefined || transform === null) return {};
  if (typeof transform !== "object" || transform === null || Array.isArray(transform)) throw invalid(`${where}.transform must be an object with headers`);
  const extraT = Object.keys(transform).filter((k) => k !== "headers");
  if (extraT.length > 0) throw invalid(`${where}.transform has an unsupported field '${extraT[0]}'`);
  const headers = (transform as { headers?: unknown }).headers;
  if (headers === undefined || headers === null) return { transform: {} };
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) throw invalid(`${where}.transform.headers must be an object`);
  const entries = Object.entries(headers);
  if (entries.length > MAX_HEADERS) throw invalid(`${where}.transform.headers sets ${entries.length} headers; at most ${MAX_HEADERS}`);
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!TOKEN.test(name)) throw invalid(`invalid header name '${name}' in ${where}: expected an HTTP token`);
    if (RESERVED.has(name.toLowerCase())) throw invalid(`header '${name}' in ${where} cannot be set by a rule`);
    if (typeof value !== "string") throw invalid(`header '${name}' in ${where} must be a string`);
    // Line breaks or NUL would let a value start a header of its own.
    if (value.length > MAX_VALUE_LENGTH || /[\r\n\0]/.test(value)) throw invalid(`invalid value for header '${name}' in ${where}`);
    for (const m of value.matchAll(E2B_PLACEHOLDER)) {
      if (IDENTITY_PLACEHOLDER.test(m[1]!)) throw invalid(`placeholder '\${${m[1]}}' in header '${name}' of ${where}: ${IDENTITY_TOKENS_UNSUPPORTED}`);
      if (!SECRET_PLACEHOLDER.test(m[1]!)) throw invalid(`unsupported placeholder '\${${m[1]}}' in header '${name}' of ${where}: only \${e2b.secrets.NAME}`);
    }
    out[name] = value;
  }
  return { transform: { headers: out } };
}

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_network_config" });
}
