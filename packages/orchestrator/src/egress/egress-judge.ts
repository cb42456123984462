// The direct path's egress judge: a reader of an NFQUEUE in the relay addon (native/relay/judge.c, its own thread).
// nft queues the packets of a sandbox's direct connection (to an address Burrow's resolver gave it for an allowed
// name; forwarded by the kernel, not proxied) until its first payload has been judged; the judge reads the TLS SNI
// or HTTP Host, allows it when the table this wrapper fills has (sandbox, address, name), asks otherwise, and answers
// with a packet mark nft makes a conntrack mark, after which the kernel forwards the connection without the queue.
// A denied connection's first held packet becomes a reset to the destination. Allowed direct connections come back
// as "ended" when they close (conntrack's TIME_WAIT or CLOSE), with conntrack's byte counts, for the audit.
// The judge reads the queue of the network namespace it was started in (a netlink socket belongs to its namespace).
import { BurrowError, Code } from "@burrow/protocol";
import { DIRECT_MARKS } from "../network/direct-ruleset.js";
import { canonicalName } from "./egress-policy.js";
import { loadRelayAddon, RELAY_ADDON_PATH, type RelayLogger } from "./native-relay.js";

/**
 * The marks judge.h defines, as the judge names them: the direct path's (network/direct-ruleset.ts), one set of
 * values for the nft rules and for this wrapper.
 */
export const JUDGE_MARKS = {
  /** Packet mark bit nft sets on packets of unjudged direct connections: they go to the queue. */
  queue: DIRECT_MARKS.queue,
  /** Verdict packet marks (the packet's own mark without `queue`, OR'ed with one of these). */
  allow: DIRECT_MARKS.allowed,
  deny: DIRECT_MARKS.denied,
  /** A packet without payload (the handshake's last ACK, pure ACKs while a head is held) passes unjudged. */
  pass: DIRECT_MARKS.pass,
  /** Conntrack mark bits nft sets; the judge reports the end of connections with `ctDirect | ctAllowed`. */
  ctDirect: DIRECT_MARKS.direct,
  ctAllowed: DIRECT_MARKS.allowed,
  ctDenied: DIRECT_MARKS.denied,
} as const;

export interface Endpoint {
  ip: string;
  port: number;
}

export interface JudgeEvent {
  /**
   * `allowed`: the name was in the table (or `decide(flow, true)`); `ask`: it was not, answer with `decide` within
   * 5 s; `denied`: reset, `reason` says why; `ended`: an allowed direct connection closed.
   */
  kind: "allowed" | "ask" | "denied" | "ended";
  /** The connection's id while it is judged (`ask`, and the `allowed`/`denied` that follow); 0 for `ended`. */
  flow: number;
  source: Endpoint;
  destination: Endpoint;
  /** The SNI or Host, when one was read. */
  name?: string;
  reason?: string;
  /** `ended`: conntrack's byte counts from the sandbox (IP headers included) and back; 0 otherwise. */
  bytesOut: number;
  bytesIn: number;
}

export interface EgressJudgeOptions {
  /** The NFQUEUE number the rules send to (0..65535). */
  queue: number;
  /** Runs on the event loop; an exception it throws is swallowed (the judge must go on). */
  onEvent: (event: JudgeEvent) => void;
  signal?: AbortSignal;
  logger?: RelayLogger;
}

export interface EgressJudge {
  /** `sandboxIp` may reach `ip` under `name` for `ttlMs` (the resolver's answer's TTL). */
  allow(sandboxIp: string, ip: string, name: string, ttlMs: number): void;
  /** Drop every entry of a sandbox that is gone. */
  forget(sandboxIp: string): void;
  /** Answer an `ask`; false when that connection no longer waits (timed out, already answered). */
  decide(flow: number, allow: boolean): boolean;
  /** Connections being judged now. */
  readonly holding: number;
  /** Deny what is held, unbind the queue, stop the thread. */
  close(): void;
}

declare const handleBrand: unique symbol;
type JudgeHandle = { readonly [handleBrand]: true };

type OnAddonEvent = (
  kind: number,
  flow: number,
  saddr: string,
  sport: number,
  daddr: string,
  dport: number,
  name: string,
  reason: string,
  bytesOut: number,
  bytesIn: number,
) => void;

/** native/relay/judge-addon.c */
interface JudgeAddon {
  judgeStart(queue: number, onEvent: OnAddonEvent): JudgeHandle;
  judgeAllow(handle: JudgeHandle, saddr: string, daddr: string, name: string, ttlMs: number): void;
  judgeForget(handle: JudgeHandle, saddr: string): void;
  judgeDecide(handle: JudgeHandle, flow: number, allow: boolean): boolean;
  judgeHolding(handle: JudgeHandle): number;
  judgeStop(handle: JudgeHandle): void;
}

const KINDS = { 1: "allowed", 2: "ask", 3: "denied", 4: "ended" } as const;

/**
 * Bind `queue` in this process's network namespace and judge its packets until `close()`. Rejects with a BurrowError
 * (FailedPrecondition, `egress_judge_unavailable`) when the addon has no judge, and with the addon's Error when the
 * queue cannot be bound: its `code` is `E<errno>`, `E16` (EBUSY) when another socket holds the queue (try another).
 */
export async function startEgressJudge(options: EgressJudgeOptions): Promise<EgressJudge> {
  options.signal?.throwIfAborted();
  const { queue, onEvent } = options;
  if (!Number.isInteger(queue) || queue < 0 || queue > 65535) {
    throw new BurrowError(Code.InvalidArgument, `egress judge: queue ${queue} is not a number from 0 to 65535`, {
      reason: "invalid_egress_queue",
    });
  }
  const addon = loadRelayAddon(options.logger) as unknown as Partial<JudgeAddon> | undefined;
  if (!addon?.judgeStart) {
    throw new BurrowError(
      Code.FailedPrecondition,
      addon
        ? `egress judge: the relay addon (${RELAY_ADDON_PATH}) is an older build without the judge; rebuild it with native/build.sh`
        : `egress judge: the relay addon (${RELAY_ADDON_PATH}) did not load; build it with native/build.sh`,
      { reason: "egress_judge_unavailable" },
    );
  }
  const judge = addon as JudgeAddon;
  const deliver: OnAddonEvent = (kind, flow, saddr, sport, daddr, dport, name, reason, bytesOut, bytesIn) => {
    const event: JudgeEvent = {
      kind: KINDS[kind as keyof typeof KINDS],
      flow,
      source: { ip: saddr, port: sport },
      destination: { ip: daddr, port: dport },
      bytesOut,
      bytesIn,
    };
    if (name) event.name = name;
    if (reason) event.reason = reason;
    try {
      onEvent(event);
    } catch {
      // The caller's handler failing must not throw into the addon's callback.
    }
  };
  const handle = judge.judgeStart(queue, deliver);
  let closed = false;
  return {
    allow(sandboxIp, ip, name, ttlMs) {
      if (closed) return;
      const normal = canonicalName(name);
      judge.judgeAllow(handle, sandboxIp, ip, normal, Math.max(0, Math.min(Math.round(ttlMs), 0xffffffff)));
    },
    forget(sandboxIp) {
      if (!closed) judge.judgeForget(handle, sandboxIp);
    },
    decide(flow, allow) {
      return !closed && judge.judgeDecide(handle, flow, allow);
    },
    get holding() {
      return closed ? 0 : judge.judgeHolding(handle);
    },
    close() {
      if (closed) return;
      closed = true;
      judge.judgeStop(handle);
    },
  };
}
