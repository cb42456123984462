import { AsyncQueue } from "../async-queue.js";
import { assertSubject, matchTokens } from "../subject.js";
import type { BusMsg } from "../types.js";

export interface RouteEntry {
  id: number;
  tokens: string[];
  queue: string | undefined;
  sink: AsyncQueue<BusMsg>;
}

/**
 * In-memory subject routing with NATS semantics: every plain subscriber gets a copy, each queue group one copy
 * (round robin). Matches are cached per subject because a few hot subjects carry most traffic.
 */
export class CoreRouter {
  private readonly entries = new Map<number, RouteEntry>();
  private cache = new Map<string, { plain: RouteEntry[]; groups: RouteEntry[][] }>();
  private nextId = 1;
  private rr = 0;

  add(pattern: string, queue: string | undefined, sink: AsyncQueue<BusMsg>): number {
    const tokens = assertSubject(pattern, true);
    const id = this.nextId++;
    this.entries.set(id, { id, tokens, queue, sink });
    this.cache.clear();
    return id;
  }

  remove(id: number): void {
    if (this.entries.delete(id)) this.cache.clear();
  }

  hasInterest(subject: string): boolean {
    const l = this.lookup(subject);
    return l.plain.length + l.groups.length > 0;
  }

  private lookup(subject: string): { plain: RouteEntry[]; groups: RouteEntry[][] } {
    let hit = this.cache.get(subject);
    if (hit) return hit;
    const tokens = subject.split(".");
    const plain: RouteEntry[] = [];
    const groups = new Map<string, RouteEntry[]>();
    for (const e of this.entries.values()) {
      if (!matchTokens(e.tokens, tokens)) continue;
      if (e.queue === undefined) plain.push(e);
      else {
        const g = groups.get(e.queue);
        if (g) g.push(e);
        else groups.set(e.queue, [e]);
      }
    }
    hit = { plain, groups: [...groups.values()] };
    if (this.cache.size > 10_000) this.cache = new Map();
    this.cache.set(subject, hit);
    return hit;
  }

  /** Hands the message to every matching subscriber; returns how many received it. */
  route(subject: string, msg: BusMsg): number {
    const { plain, groups } = this.lookup(subject);
    let n = 0;
    for (const e of plain) if (e.sink.push(msg)) n++;
    for (const g of groups) {
      const e = g[this.rr++ % g.length]!;
      if (e.sink.push(msg)) n++;
    }
    return n;
  }

  closeAll(): void {
    for (const e of this.entries.values()) e.sink.end();
    this.entries.clear();
    this.cache.clear();
  }
}
