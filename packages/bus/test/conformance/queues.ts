import { describe, expect, it } from "vitest";
import { DLQ_HEADER, WorkQueue, type Bus, type QueueMessage } from "../../src/index.js";
import { dec, enc, uniq, type BusBackend } from "./backend.js";

async function must(p: Promise<QueueMessage | null>): Promise<QueueMessage> {
  const m = await p;
  if (!m) throw new Error("no message");
  return m;
}

export function queueSuite(get: () => { backend: BusBackend; bus: Bus }): void {
  describe("work queues", () => {
    it("delivers higher priority first and FIFO within a priority", async () => {
      const { bus } = get();
      const q = await WorkQueue.open(bus, { name: uniq("q") });
      const items: [string, number][] = [["a1", 0], ["a2", 0], ["b1", 9], ["c1", 5], ["b2", 9], ["a3", 0], ["c2", 5]];
      for (const [d, p] of items) await q.enqueue(enc(d), { priority: p });
      const c = await q.consumer();
      const got: string[] = [];
      for (let i = 0; i < items.length; i++) {
        const m = await must(c.next({ timeoutMs: 5000 }));
        got.push(`${dec(m.data)}@${m.priority}`);
        await m.ack();
      }
      expect(got).toEqual(["b1@9", "b2@9", "c1@5", "c2@5", "a1@0", "a2@0", "a3@0"]);
      expect(await c.next({ timeoutMs: 0 })).toBeNull();
      await c.close();
    });

    it("wakes a waiting consumer when work arrives", async () => {
      const { bus } = get();
      const q = await WorkQueue.open(bus, { name: uniq("q"), pollMs: 10_000 });
      const c = await q.consumer();
      const waiting = c.next({ timeoutMs: 8000 });
      await new Promise((r) => setTimeout(r, 100));
      await q.enqueue(enc("late"), { priority: 3 });
      const m = await must(waiting);
      expect(dec(m.data)).toBe("late");
      await m.ack();
      await c.close();
    });

    it("de-duplicates by message id", async () => {
      const { bus } = get();
      const q = await WorkQueue.open(bus, { name: uniq("q") });
      const a = await q.enqueue(enc("pay"), { msgId: "invoice-7" });
      const b = await q.enqueue(enc("pay"), { msgId: "invoice-7", priority: 9 });
      expect(b.duplicate).toBe(true);
      expect(b.seq).toBe(a.seq);
      const c = await q.consumer();
      const m = await must(c.next());
      expect(m.msgId).toBe("invoice-7");
      await m.ack();
      expect(await c.next({ timeoutMs: 300 })).toBeNull();
      await c.close();
    });

    it("retries nacked messages with backoff, then dead-letters after max attempts", async () => {
      const { bus } = get();
      const name = uniq("q");
      const q = await WorkQueue.open(bus, { name, maxAttempts: 3, backoffMs: [150, 400], pollMs: 50 });
      const dlq = await q.deadLetters(uniq("dl"));
      await q.enqueue(enc("flaky"), { priority: 2, headers: { "x-k": "v" } });
      const c = await q.consumer();
      const times: number[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const m = await must(c.next({ timeoutMs: 5000 }));
        times.push(Date.now());
        expect(m.attempt).toBe(attempt);
        await m.nack();
      }
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(120);
      expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(350);
      const dead = await dlq.next({ timeoutMs: 15_000 });
      expect(dead).not.toBeNull();
      expect(dec(dead!.data)).toBe("flaky");
      expect(dead!.headers[DLQ_HEADER.reason]).toBe("max_deliver");
      expect(dead!.headers["x-k"]).toBe("v");
      await dead!.ack();
      expect(await c.next({ timeoutMs: 500 })).toBeNull();
      await c.close();
      await dlq.close();
    });

    it("gives a message held by a dead consumer to a live one", async () => {
      const { backend, bus } = get();
      const name = uniq("q");
      const q = await WorkQueue.open(bus, { name, ackWaitMs: 700, pollMs: 50 });
      const other = await backend.open();
      const q2 = await WorkQueue.open(other, { name, ackWaitMs: 700, pollMs: 50 });
      await q.enqueue(enc("job"), { priority: 4 });
      const dying = await q.consumer();
      const held = await must(dying.next());
      await dying.close();
      const live = await q2.consumer();
      const m = await must(live.next({ timeoutMs: 10_000 }));
      expect([dec(m.data), m.seq, m.attempt]).toEqual(["job", held.seq, 2]);
      await m.ack();
      expect(await live.next({ timeoutMs: 1200 })).toBeNull();
      await live.close();
      await other.close();
    });
  });
}
