import { BurrowError, Code } from "@burrow/protocol";
import { assertAgentId } from "../envelope/key-registry.js";
import { AsyncQueue } from "../async-queue.js";
import { sleep } from "../signals.js";
import type { Bus, KV } from "../types.js";

export const PRESENCE_BUCKET = "burrow_presence";
// Presence entries outlive any sensible window so a dead agent reads as "down", not as never seen.
const PRESENCE_RETENTION_MS = 24 * 3600_000;

export interface HeartbeatInfo {
  agentId: string;
  group?: string;
  meta?: Record<string, string>;
}

interface PresenceValue extends HeartbeatInfo {
  atMs: number;
}

export type AgentState = "up" | "down";

export interface AgentStatus extends HeartbeatInfo {
  state: AgentState;
  /** Monitor-local time of the last heartbeat seen. */
  lastSeenMs: number;
}

export interface LivenessEvent {
  type: AgentState;
  agent: AgentStatus;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export async function presenceBucket(bus: Bus): Promise<KV> {
  return bus.kv(PRESENCE_BUCKET, { ttlMs: PRESENCE_RETENTION_MS });
}

/** One heartbeat. */
export async function sendHeartbeat(bus: Bus, info: HeartbeatInfo, kv?: KV): Promise<void> {
  assertAgentId(info.agentId);
  const v: PresenceValue = { ...info, atMs: Date.now() };
  await (kv ?? (await presenceBucket(bus))).put(info.agentId, enc.encode(JSON.stringify(v)));
}

/** Heartbeats every `intervalMs` until close(). */
export class Heartbeater {
  private readonly stop = new AbortController();
  private readonly loop: Promise<void>;

  constructor(bus: Bus, info: HeartbeatInfo, intervalMs = 1000) {
    assertAgentId(info.agentId);
    this.loop = (async () => {
      const kv = await presenceBucket(bus);
      while (!this.stop.signal.aborted) {
        await sendHeartbeat(bus, info, kv).catch(() => undefined); // a missed beat is what liveness measures
        await sleep(intervalMs, this.stop.signal).catch(() => undefined);
      }
    })().catch(() => undefined); // the bus closed under us: the agent simply stops beating
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }
}

export interface LivenessMonitorOptions {
  /** An agent is down when no heartbeat arrived for this long. @default 5000 */
  windowMs?: number;
  /** How often presence is read (expiry is never announced on NATS 2.9/2.10, so this polls). @default windowMs / 4 */
  pollMs?: number;
}

/**
 * Marks agents up or down from heartbeats. Time is measured on the monitor's clock from when it saw each
 * heartbeat's revision change, so agents' clock skew cannot keep a dead agent up.
 */
export class LivenessMonitor {
  private readonly seen = new Map<string, { revision: number; localMs: number; status: AgentStatus }>();
  private readonly subscribers = new Set<AsyncQueue<LivenessEvent>>();
  /** Agents whose first state has been announced to subscribers. */
  private readonly announced = new Set<string>();
  private readonly stop = new AbortController();
  private loop: Promise<void> | undefined;
  readonly windowMs: number;
  private readonly pollMs: number;

  private constructor(private readonly kv: KV, o: LivenessMonitorOptions) {
    this.windowMs = o.windowMs ?? 5000;
    this.pollMs = o.pollMs ?? Math.max(50, Math.floor(this.windowMs / 4));
    if (!(this.windowMs > 0)) throw new BurrowError(Code.InvalidArgument, "windowMs must be positive");
  }

  static async open(bus: Bus, o: LivenessMonitorOptions = {}): Promise<LivenessMonitor> {
    const m = new LivenessMonitor(await presenceBucket(bus), o);
    await m.poll();
    m.loop = (async () => {
      while (!m.stop.signal.aborted) {
        await sleep(m.pollMs, m.stop.signal).catch(() => undefined);
        if (!m.stop.signal.aborted) await m.poll().catch(() => undefined);
      }
    })();
    return m;
  }

  /** Reads presence once and emits up/down transitions. */
  async poll(): Promise<void> {
    const now = Date.now();
    for (const e of await this.kv.entries({ signal: this.stop.signal })) {
      const key = e.key;
      let v: PresenceValue;
      try {
        v = JSON.parse(dec.decode(e.value)) as PresenceValue;
      } catch {
        continue;
      }
      const prev = this.seen.get(key);
      if (!prev || prev.revision !== e.revision) {
        // First sight: trust the agent's timestamp, but never into the future.
        const localMs = prev ? now : Math.min(now, v.atMs);
        const status: AgentStatus = { agentId: v.agentId, ...(v.group ? { group: v.group } : {}), ...(v.meta ? { meta: v.meta } : {}), state: prev?.status.state ?? "down", lastSeenMs: localMs };
        this.seen.set(key, { revision: e.revision, localMs, status });
      }
    }
    for (const s of this.seen.values()) {
      const state: AgentState = now - s.localMs <= this.windowMs ? "up" : "down";
      const changed = state !== s.status.state || !this.announced.has(s.status.agentId);
      s.status = { ...s.status, state, lastSeenMs: s.localMs };
      if (changed) {
        this.announced.add(s.status.agentId);
        for (const q of this.subscribers) q.push({ type: state, agent: s.status });
      }
    }
  }

  status(agentId: string): AgentStatus | undefined {
    return this.seen.get(agentId)?.status;
  }

  agents(): AgentStatus[] {
    return [...this.seen.values()].map((s) => s.status);
  }

  /** Up/down transitions from now on (plus the first state of every agent seen after subscribing). */
  events(opts: { signal?: AbortSignal } = {}): AsyncIterable<LivenessEvent> {
    const q = new AsyncQueue<LivenessEvent>(10_000, () => this.subscribers.delete(q));
    this.subscribers.add(q);
    for (const s of this.seen.values()) q.push({ type: s.status.state, agent: s.status });
    opts.signal?.addEventListener("abort", () => {
      this.subscribers.delete(q);
      q.end();
    }, { once: true });
    return q;
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
    for (const q of this.subscribers) q.end();
    this.subscribers.clear();
  }
}
