// The direct path: connections of sandboxes with domain rules that the kernel forwards itself, judged by their first
// payload instead of relayed by the egress proxy (network/direct-ruleset.ts has the firewall's side).
//
// Burrow's resolver answers a sandbox; for each address it gives for a name the sandbox's rules allow (by name, or by
// that address), not forbidden, the pair goes into @direct and the name into the judge's table, both for as long as
// the answer is kept. The sandbox's next connection to that address on 80/443 is forwarded by the kernel; the judge
// (egress-judge.ts, a thread of the native addon reading an NFQUEUE) reads its SNI or Host and lets it through at
// once when the table has that name for that pair. A name it does not have comes here ("ask"): judged with the
// sandbox's current rules, allowed only when the name resolves to the address the connection goes to — so a
// sandbox reaches only addresses its allowed names point at, whatever it sends. Refused connections are reset at
// both ends (an HTTP client gets a reset, not the proxy's 403: the destination has already answered the handshake).
//
// Only sandboxes whose TCP 80/443 the proxy would take merely to read a name (domain rules; no header transforms, no
// user's proxy): the others' connections must pass through the proxy. Any other connection — an address the
// resolver did not give, an IP literal, a forbidden address — goes to the proxy as before. When the judge cannot run
// (the addon or iptables-nft missing, no queue free) this says why once and everything goes to the proxy.
import { writeFile } from "node:fs/promises";
import { isIPv4 } from "node:net";
import type { BurrowNetworkManager } from "../network/network-manager.js";
import { inspectPortsOf, proxyingOf, sendsWebThroughProxy } from "../network/egress-rules.js";
import type { EgressAudit, EgressRecord } from "./egress-audit.js";
import { startEgressJudge, type EgressJudge, type JudgeEvent } from "./egress-judge.js";
import { keepSeconds } from "./resolved-addresses.js";
import { canonicalName, judgeAddress, judgeName, type EgressVerdict, type SandboxPolicy } from "./egress-policy.js";

export interface DirectPathOptions {
  network: BurrowNetworkManager;
  audit: EgressAudit;
  /** Why an address may never be reached (loopback, the host's, the sandboxes' subnet …), or undefined. */
  forbidden: (ip: string) => string | undefined;
  /** Burrow's resolver's own lookup (cached), for names the judge asks about. */
  resolve4: (name: string) => Promise<string[]>;
  logger?: { warn(obj: object, msg: string): void };
}

/** Queue numbers tried, from one derived from the bridge's name (instances on one host each need their own). */
const QUEUE_BASE = 0x4000;
const QUEUE_SPAN = 0x1000;
const QUEUE_TRIES = 16;
/** Allowed connections waiting for their end (to be audited with their bytes); the oldest go first. */
const MAX_OPEN = 65_536;
/** Ends remembered to ignore a second report of one. */
const MAX_ENDED = 4_096;

export class DirectPath {
  readonly #opts: DirectPathOptions;
  readonly #judge: EgressJudge;
  readonly #unwatch: () => void;
  /** Allowed connections by `src:port>dst:port`, until their end is reported. */
  readonly #open = new Map<string, EgressRecord>();
  /** Verdicts given on the judge's questions, by flow, until the judge reports the outcome. */
  readonly #asked = new Map<number, EgressVerdict>();
  /** Connections whose end was audited already (conntrack may report the end of one twice). */
  readonly #ended = new Set<string>();

  private constructor(opts: DirectPathOptions, judge: EgressJudge) {
    this.#opts = opts;
    this.#judge = judge;
    this.#unwatch = opts.network.onEgressChange((ip) => judge.forget(ip));
  }

  /** The direct path, or undefined (said to the logger) when it cannot run here: the proxy then takes everything. */
  static async start(opts: DirectPathOptions, signal?: AbortSignal): Promise<DirectPath | undefined> {
    let path: DirectPath | undefined;
    const onEvent = (event: JudgeEvent) => {
      if (path) path.#onEvent(event);
    };
    let judge: EgressJudge | undefined;
    const first = QUEUE_BASE + (hash(opts.network.bridge) % QUEUE_SPAN);
    let queue = first;
    let lastError: unknown;
    for (; queue < first + QUEUE_TRIES; queue++) {
      try {
        judge = await startEgressJudge({ queue, onEvent });
        break;
      } catch (err) {
        lastError = err;
        // Another process holds this queue: the next one. Anything else will not get better.
        if ((err as { code?: string }).code !== "E16") break;
      }
    }
    if (!judge) {
      opts.logger?.warn({ err: (lastError as Error | undefined)?.message }, "egress: the direct path is off (the egress judge did not start); sandboxes with domain rules go through the egress proxy");
      return undefined;
    }
    try {
      // Per-connection byte counters, for the audit of connections the kernel forwarded (a host-wide switch, off by
      // default; it costs 16 bytes per tracked connection).
      await writeFile("/proc/sys/net/netfilter/nf_conntrack_acct", "1\n");
      await opts.network.setDirectQueue(queue, signal);
    } catch (err) {
      judge.close();
      opts.logger?.warn({ err: (err as Error).message }, "egress: the direct path is off (its iptables-nft rule could not be added); sandboxes with domain rules go through the egress proxy");
      return undefined;
    }
    path = new DirectPath(opts, judge);
    return path;
  }

  /**
   * Burrow's resolver gave the sandbox at `sandboxIp` these addresses for `name`. Resolves when the pairs are in
   * place (the resolver waits for that before it answers, so the sandbox's connection right after takes the path).
   */
  noteAnswer(sandboxIp: string, name: string, addresses: readonly string[], ttlS: number): Promise<void> | undefined {
    const policy = this.#opts.network.egressOf(sandboxIp);
    if (!policy || !takesDirectPath(policy.rules)) return undefined;
    const host = canonicalName(name);
    const keepS = keepSeconds(ttlS);
    const direct = addresses.filter((address) => isIPv4(address) && this.#opts.forbidden(address) === undefined && verdictOf(policy, host, address).allowed);
    if (direct.length === 0) return undefined;
    for (const address of direct) this.#judge.allow(sandboxIp, address, host, keepS * 1000);
    return this.#opts.network.addDirect(sandboxIp, direct, keepS).catch((err: Error) => {
      this.#opts.logger?.warn({ err: err.message, sandboxIp }, "egress: direct path pairs not added (connections go through the egress proxy)");
    });
  }

  /** Connections the judge holds now, waiting for their name or a verdict. */
  get holding(): number {
    return this.#judge.holding;
  }

  close(): void {
    this.#unwatch();
    this.#judge.close();
  }

  #onEvent(event: JudgeEvent): void {
    switch (event.kind) {
      case "allowed":
        this.#opened(event, this.#takeAsked(event)?.rule);
        return;
      case "ask": {
        // The judge reports the outcome as "allowed" or "denied" (audited there, with the rule kept here).
        const answer = (verdict: EgressVerdict) => {
          this.#asked.set(event.flow, verdict);
          if (this.#asked.size > MAX_OPEN) this.#asked.delete(this.#asked.keys().next().value!);
          this.#judge.decide(event.flow, verdict.allowed);
        };
        void this.#ask(event).then(answer, () => answer({ allowed: false, rule: "egress: no verdict" }));
        return;
      }
      case "denied":
        this.#refused(event, this.#takeAsked(event)?.rule ?? event.reason ?? "refused");
        return;
      case "ended": {
        const key = flowKey(event);
        if (this.#ended.has(key)) return;
        this.#ended.add(key);
        if (this.#ended.size > MAX_ENDED) this.#ended.delete(this.#ended.values().next().value!);
        const record = this.#open.get(key);
        this.#open.delete(key);
        const sandbox = record ? undefined : this.#opts.network.egressOf(event.source.ip);
        // A connection allowed before this process started has no record here: audited with what is known.
        const base = record ?? (sandbox && { ...this.#base(event, sandbox.sandboxId), verdict: "allowed" as const, rule: "judged before a restart" });
        if (base) this.#opts.audit.add({ ...base, bytesOut: event.bytesOut, bytesIn: event.bytesIn, atMs: Date.now() });
        return;
      }
    }
  }

  /** The verdict on a name the judge's table did not have for this pair. */
  async #ask(event: JudgeEvent): Promise<EgressVerdict> {
    const policy = this.#opts.network.egressOf(event.source.ip);
    const host = canonicalName(event.name ?? "");
    const dst = event.destination.ip;
    if (!policy) return { allowed: false, rule: "no sandbox at this address" };
    if (!takesDirectPath(policy.rules)) return { allowed: false, rule: "not on the direct path (rules changed)" };
    const why = this.#opts.forbidden(dst);
    if (why) return { allowed: false, rule: why };
    if (isIPv4(host)) return host === dst ? judgeAddress(policy, dst) : { allowed: false, rule: `${host} is not the address connected to (${dst})` };
    const byName = judgeName(policy, host);
    if (byName && !byName.allowed) return byName;
    const addresses = await this.#opts.resolve4(host);
    if (!addresses.includes(dst)) return { allowed: false, rule: `${host} does not resolve to ${dst}` };
    return byName ?? judgeAddress(policy, dst);
  }

  #takeAsked(event: JudgeEvent): EgressVerdict | undefined {
    const verdict = this.#asked.get(event.flow);
    this.#asked.delete(event.flow);
    return verdict;
  }

  #opened(event: JudgeEvent, rule: string | undefined): void {
    const policy = this.#opts.network.egressOf(event.source.ip);
    if (!policy) return;
    const host = canonicalName(event.name ?? "");
    const key = flowKey(event);
    // The source port may be used again for a new connection once the old one's end was reported.
    this.#ended.delete(key);
    if (this.#open.size >= MAX_OPEN) this.#open.delete(this.#open.keys().next().value!);
    this.#open.set(key, { ...this.#base(event, policy.sandboxId), host, verdict: "allowed", rule: rule ?? verdictOf(policy, host, event.destination.ip).rule });
  }

  #refused(event: JudgeEvent, rule: string): void {
    const policy = this.#opts.network.egressOf(event.source.ip);
    if (!policy) return;
    const host = event.name ? canonicalName(event.name) : undefined;
    this.#opts.audit.add({ ...this.#base(event, policy.sandboxId), ...(host ? { host } : {}), verdict: "denied", rule, atMs: Date.now() });
  }

  #base(event: JudgeEvent, sandboxId: string): EgressRecord {
    return { sandboxId, via: "direct", verdict: "allowed", rule: "", ip: event.destination.ip, port: event.destination.port, bytesOut: 0, bytesIn: 0, atMs: 0 };
  }
}

/** Sandboxes whose 80/443 the proxy takes only to read names: domain rules, no header transforms, no user's proxy. */
export function takesDirectPath(rules: SandboxPolicy["rules"]): boolean {
  return sendsWebThroughProxy(rules) && proxyingOf(rules) === "none" && inspectPortsOf(rules).length === 0;
}

/** A name's verdict for a connection to `address`: its domain entries, else the address's. */
function verdictOf(policy: SandboxPolicy, host: string, address: string): EgressVerdict {
  return judgeName(policy, host) ?? judgeAddress(policy, address);
}

function flowKey(event: JudgeEvent): string {
  return `${event.source.ip}:${event.source.port}>${event.destination.ip}:${event.destination.port}`;
}

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) >>> 0;
  return h;
}
