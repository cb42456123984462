import { BurrowError, Code } from "@burrow/protocol";
import { sleep } from "../signals.js";
import type { Bus, KV } from "../types.js";
import type { QueueConsumer, QueueMessage, WorkQueue } from "../queue/work-queue.js";
import { Heartbeater } from "./presence.js";

export const LEASE_BUCKET = "burrow_group_leases";

export interface GroupWorkerOptions {
  bus: Bus;
  agentId: string;
  group: string;
  queue: WorkQueue;
  /** The active member is presumed dead when its lease is not renewed for this long. @default 5000 */
  windowMs?: number;
  /** Heartbeat and lease-renewal interval. @default windowMs / 4 */
  heartbeatMs?: number;
  /** Throwing nacks the message (retried with the queue's backoff); returning acks it. */
  handler: (m: QueueMessage, signal: AbortSignal) => Promise<void>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Active/standby membership of a group: one member holds the group's lease (a KV compare-and-set) and consumes the
 * group's queue; the others heartbeat and wait. When the active member stops renewing for `windowMs`, a standby
 * takes the lease and starts consuming; what the dead member held comes back to it after the queue's ack wait,
 * so nothing is lost, and the dead member never acknowledged it, so it is not counted done twice.
 */
export class GroupWorker {
  private readonly stop = new AbortController();
  private readonly loop: Promise<void>;
  private readonly heart: Heartbeater;
  private consumer: QueueConsumer | undefined;
  private working: Promise<void> | undefined;
  private lease: { revision: number } | undefined;
  private readonly windowMs: number;
  private readonly beatMs: number;
  activeChanges = 0;

  private constructor(private readonly o: GroupWorkerOptions, private readonly kv: KV) {
    this.windowMs = o.windowMs ?? 5000;
    this.beatMs = o.heartbeatMs ?? Math.max(50, Math.floor(this.windowMs / 4));
    if (this.beatMs >= this.windowMs) throw new BurrowError(Code.InvalidArgument, "heartbeatMs must be below windowMs");
    this.heart = new Heartbeater(o.bus, { agentId: o.agentId, group: o.group }, this.beatMs);
    this.loop = this.run();
  }

  static async start(o: GroupWorkerOptions): Promise<GroupWorker> {
    return new GroupWorker(o, await o.bus.kv(LEASE_BUCKET));
  }

  get isActive(): boolean {
    return this.lease !== undefined;
  }

  private async run(): Promise<void> {
    // Remote lease revision → when this member last saw it change (its own clock).
    let observed: { revision: number; sinceMs: number } | undefined;
    while (!this.stop.signal.aborted) {
      try {
        const cur = await this.kv.get(this.o.group);
        const mine = enc.encode(JSON.stringify({ holder: this.o.agentId, atMs: Date.now() }));
        if (!cur) {
          this.lease = { revision: await this.kv.create(this.o.group, mine) };
        } else if ((JSON.parse(dec.decode(cur.value)) as { holder: string }).holder === this.o.agentId) {
          this.lease = { revision: await this.kv.update(this.o.group, mine, cur.revision) };
        } else {
          await this.resign();
          if (!observed || observed.revision !== cur.revision) observed = { revision: cur.revision, sinceMs: Date.now() };
          else if (Date.now() - observed.sinceMs > this.windowMs) {
            this.lease = { revision: await this.kv.update(this.o.group, mine, cur.revision) };
          }
        }
      } catch {
        // A lost compare-and-set race (someone else renewed or took the lease) or an unreachable bus: either way
        // this member cannot prove it leads, so it stops consuming and stands by.
        if (this.stop.signal.aborted) break;
        await this.resign();
      }
      if (this.lease && !this.consumer) await this.activate();
      await sleep(this.beatMs, this.stop.signal).catch(() => undefined);
    }
  }

  private async activate(): Promise<void> {
    this.activeChanges++;
    const c = await this.o.queue.consumer();
    this.consumer = c;
    // Never rejects: a failing consumer just ends this member's turn (the lease loop decides what comes next).
    this.working = (async () => {
      for await (const m of c) {
        try {
          await this.o.handler(m, this.stop.signal);
          await m.ack();
        } catch {
          if (this.stop.signal.aborted) return; // dying: leave it unacknowledged for the standby
          await m.nack().catch(() => undefined);
        }
      }
    })().catch(() => undefined);
  }

  private async resign(): Promise<void> {
    this.lease = undefined;
    const c = this.consumer;
    this.consumer = undefined;
    if (c) {
      await c.close();
      await this.working?.catch(() => undefined);
    }
  }

  /** Leaves the group: stops heartbeats and consuming, and releases the lease at once so a standby takes over. */
  async close(): Promise<void> {
    const held = this.lease;
    await this.halt();
    if (held) await this.kv.delete(this.o.group).catch(() => undefined);
  }

  /**
   * Stops like a crash: no more heartbeats or renewals, nothing acknowledged, the lease left to expire.
   * The in-flight handler sees its signal aborted.
   */
  async halt(): Promise<void> {
    this.stop.abort();
    await this.heart.close();
    await this.loop;
    const c = this.consumer;
    this.consumer = undefined;
    this.lease = undefined;
    if (c) await c.close();
  }
}
