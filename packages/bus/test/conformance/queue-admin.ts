import { describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { QueueAdmin, WorkQueue, queueStream, type Bus, type QueueMessage } from "../../src/index.js";
import { dec, enc, uniq, type BusBackend } from "./backend.js";

async function must(p: Promise<QueueMessage | null>): Promise<QueueMessage> {
  const m = await p;
  if (!m) throw new Error("no message");
  return m;
}

/** Dead-letters `data` on `q`: through term, or a nack on its last attempt (both move it at once on both backends). */
async function kill(q: WorkQueue, c: Awaited<ReturnType<WorkQueue["consumer"]>>, how: "term" | "nack", error?: string): Promise<void> {
  for (;;) {
    const m = await must(c.next({ timeoutMs: 5000 }));
    if (how === "term") return m.term(error === undefined ? undefined : { error });
    await m.nack({ delayMs: 0, ...(error !== undefined ? { error: `${error} (attempt ${m.attempt})` } : {}) });
    if (m.attempt >= q.opts.maxAttempts) return;
  }
}

export function queueAdminSuite(get: () => { backend: BusBackend; bus: Bus }): void {
  describe("queue admin", () => {
    it("reads depth without creating or changing anything", async () => {
      const { bus } = get();
      const admin = new QueueAdmin(bus);
      const name = uniq("q");
      const q = await WorkQueue.open(bus, { name, ackWaitMs: 60_000 });
      for (const p of [0, 5, 5]) await q.enqueue(enc(`m${p}`), { priority: p });
      expect(await admin.depth(name)).toEqual({ name, ready: 3, inFlight: 0, deadLetters: 0 });
      // Looking made no consumer: the queue still has none.
      expect(await bus.consumerInfos(queueStream(name))).toEqual([]);
      const c = await q.consumer();
      const held = await must(c.next());
      expect(held.priority).toBe(5);
      expect(await admin.depth(name)).toEqual({ name, ready: 2, inFlight: 1, deadLetters: 0 });
      expect((await admin.list()).find((d) => d.name === name)).toEqual({ name, ready: 2, inFlight: 1, deadLetters: 0 });
      await held.ack();
      expect(await admin.depth(name)).toEqual({ name, ready: 2, inFlight: 0, deadLetters: 0 });
      // A queue nobody opened is NotFound and stays absent.
      const ghost = uniq("ghost");
      await expect(admin.depth(ghost)).rejects.toMatchObject({ code: Code.NotFound });
      expect(await admin.names()).not.toContain(ghost);
      await c.close();
    });

    it("lists dead letters, requeues one at its priority and drops another", async () => {
      const { bus } = get();
      const admin = new QueueAdmin(bus);
      const name = uniq("q");
      const q = await WorkQueue.open(bus, { name, maxAttempts: 2, backoffMs: [0], pollMs: 50 });
      const c = await q.consumer();
      await q.enqueue(enc("hopeless"), { priority: 7, headers: { "x-k": "v" } });
      await kill(q, c, "nack", "upstream timed out");
      await q.enqueue(enc("refused"), { priority: 1 });
      await kill(q, c, "term", "bad input:\nno id");
      const page = await admin.deadLetters(name);
      expect(page.total).toBe(2);
      expect(page.next).toBeUndefined();
      const [a, b] = page.items;
      expect([dec(a!.data), a!.attempts, a!.reason, a!.priority, a!.headers]).toEqual(["hopeless", 2, "max_deliver", 7, { "x-k": "v" }]);
      expect([dec(b!.data), b!.attempts, b!.reason, b!.priority]).toEqual(["refused", 1, "terminated", 1]);
      // The error given with the last nack, or with the term (one line).
      expect([a!.lastError, b!.lastError]).toEqual(["upstream timed out (attempt 2)", "bad input: no id"]);
      expect(a!.time).toBeGreaterThan(Date.now() - 60_000);
      expect(Object.keys(b!.headers).some((k) => k.startsWith("burrow-dlq-"))).toBe(false);
      expect(await admin.depth(name)).toEqual({ name, ready: 0, inFlight: 0, deadLetters: 2 });
      // Pages: one at a time.
      const first = await admin.deadLetters(name, { limit: 1 });
      expect(first.items.map((d) => d.seq)).toEqual([a!.seq]);
      expect((await admin.deadLetters(name, { limit: 1, after: first.next! })).items.map((d) => d.seq)).toEqual([b!.seq]);

      const back = await admin.requeue(name, a!.seq);
      expect(back.seq).toBeGreaterThan(0);
      const again = await must(c.next({ timeoutMs: 5000 }));
      expect([dec(again.data), again.priority, again.attempt, again.headers["x-k"]]).toEqual(["hopeless", 7, 1, "v"]);
      await again.ack();
      await expect(admin.requeue(name, a!.seq)).rejects.toMatchObject({ code: Code.NotFound });
      await admin.drop(name, b!.seq);
      await expect(admin.drop(name, b!.seq)).rejects.toMatchObject({ code: Code.NotFound });
      expect(await admin.depth(name)).toEqual({ name, ready: 0, inFlight: 0, deadLetters: 0 });
      expect(await c.next({ timeoutMs: 300 })).toBeNull();
      await c.close();
    });

    it("requeues and drops all, and never touches another queue's dead letters", async () => {
      const { bus } = get();
      const admin = new QueueAdmin(bus);
      const name = uniq("q");
      const other = uniq("q");
      const q = await WorkQueue.open(bus, { name, pollMs: 50 });
      const q2 = await WorkQueue.open(bus, { name: other, pollMs: 50 });
      const c = await q.consumer();
      const c2 = await q2.consumer();
      for (let i = 0; i < 3; i++) {
        await q.enqueue(enc(`a${i}`), { priority: i });
        await kill(q, c, "term");
      }
      await q2.enqueue(enc("theirs"));
      await kill(q2, c2, "term");
      const theirs = (await admin.deadLetters(other)).items[0]!;
      await expect(admin.drop(name, theirs.seq)).rejects.toMatchObject({ code: Code.NotFound });
      await expect(admin.requeue(name, theirs.seq)).rejects.toMatchObject({ code: Code.NotFound });

      expect(await admin.requeueAll(name)).toBe(3);
      const got: string[] = [];
      for (let i = 0; i < 3; i++) {
        const m = await must(c.next({ timeoutMs: 5000 }));
        got.push(dec(m.data));
        await m.term();
      }
      expect(got).toEqual(["a2", "a1", "a0"]);
      expect((await admin.depth(name)).deadLetters).toBe(3);
      expect(await admin.dropAll(name)).toBe(3);
      expect((await admin.depth(name)).deadLetters).toBe(0);
      expect((await admin.depth(other)).deadLetters).toBe(1);
      await expect(admin.dropAll(uniq("ghost"))).rejects.toMatchObject({ code: Code.NotFound });
      await c.close();
      await c2.close();
    });
  });
}
