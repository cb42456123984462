import { describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { DLQ_HEADER, DLQ_STREAM, deadLetterSubject, type Bus, type DurableMsg } from "../../src/index.js";
import { dec, enc, uniq, type BusBackend } from "./backend.js";

async function mustNext(c: { next(o?: { timeoutMs?: number }): Promise<DurableMsg | null> }, timeoutMs = 10_000): Promise<DurableMsg> {
  const m = await c.next({ timeoutMs });
  if (!m) throw new Error("no message arrived");
  return m;
}

export function durableSuite(get: () => { backend: BusBackend; bus: Bus }): void {
  describe("streams and durable consumers", () => {
    it("stores, delivers in order and acknowledges", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`] });
      for (let i = 1; i <= 3; i++) {
        const a = await bus.publishDurable(`${name}.x`, enc(String(i)));
        expect(a).toMatchObject({ stream: name, seq: i, duplicate: false });
      }
      const c = await bus.consumer(name, { durable: "d1", ackWaitMs: 5000 });
      const got: string[] = [];
      for (let i = 0; i < 3; i++) {
        const m = await mustNext(c);
        expect(m.deliveryCount).toBe(1);
        got.push(dec(m.data));
        await m.ack();
      }
      expect(got).toEqual(["1", "2", "3"]);
      expect(await c.next({ timeoutMs: 0 })).toBeNull();
      expect(await c.info()).toMatchObject({ numPending: 0, numAckPending: 0 });
      await c.close();
    });

    it("fails with NotFound when no stream stores the subject", async () => {
      const { bus } = get();
      await expect(bus.publishDurable(uniq("nostream"), enc("x"))).rejects.toMatchObject({ code: Code.NotFound });
    });

    it("stores core publishes to a stream's subjects too", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.*`] });
      await bus.publish(`${name}.core`, enc("plain"));
      await bus.flush();
      const c = await bus.consumer(name, { durable: "d" });
      const m = await mustNext(c);
      expect(dec(m.data)).toBe("plain");
      await m.ack();
      await c.close();
    });

    it("de-duplicates by message id within the window", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`], duplicateWindowMs: 60_000 });
      const a = await bus.publishDurable(`${name}.x`, enc("once"), { msgId: "m-1" });
      const b = await bus.publishDurable(`${name}.x`, enc("twice"), { msgId: "m-1" });
      expect(b).toEqual({ stream: name, seq: a.seq, duplicate: true });
      await bus.publishDurable(`${name}.x`, enc("other"), { msgId: "m-2" });
      const c = await bus.consumer(name, { durable: "d" });
      const first = await mustNext(c);
      expect([dec(first.data), first.msgId]).toEqual(["once", "m-1"]);
      await first.ack();
      const second = await mustNext(c);
      expect(dec(second.data)).toBe("other");
      await second.ack();
      expect(await c.next({ timeoutMs: 0 })).toBeNull();
      await c.close();
    });

    it("filters by subject with wildcards", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`] });
      await bus.publishDurable(`${name}.a.1`, enc("a1"));
      await bus.publishDurable(`${name}.b.1`, enc("b1"));
      await bus.publishDurable(`${name}.a.2`, enc("a2"));
      const c = await bus.consumer(name, { durable: "only-a", filterSubject: `${name}.a.*` });
      const got = [];
      for (let i = 0; i < 2; i++) {
        const m = await mustNext(c);
        got.push(dec(m.data));
        await m.ack();
      }
      expect(got).toEqual(["a1", "a2"]);
      expect(await c.next({ timeoutMs: 0 })).toBeNull();
      await c.close();
    });

    it("discards the oldest messages to stay under maxBytes, and applies a lowered cap at once", async () => {
      const { bus } = get();
      const name = uniq("S");
      const readAll = async (durable: string): Promise<number[]> => {
        const c = await bus.consumer(name, { durable });
        const got: number[] = [];
        for (let m = await c.next({ timeoutMs: 1000 }); m; m = await c.next({ timeoutMs: 1000 })) {
          got.push(Number(dec(m.data).slice(0, 4)));
          await m.ack();
        }
        await c.close();
        return got;
      };
      const newest = (n: number, total: number) => Array.from({ length: n }, (_, i) => total - n + i);
      // 1 KiB messages under a 10 KiB cap. A message also counts its subject and headers (and on NATS some framing),
      // so the backends may keep one fewer than ten; what both must do is keep only the newest, in order.
      await bus.ensureStream({ name, subjects: [`${name}.>`], maxBytes: 10 * 1024 });
      for (let i = 0; i < 40; i++) {
        // Discard "old": every publish is accepted, none refused for space.
        const a = await bus.publishDurable(`${name}.e`, enc(String(i).padStart(4, "0") + "x".repeat(1020)));
        expect(a.seq).toBe(i + 1);
      }
      const kept = await readAll("d1");
      expect(kept.length).toBeGreaterThanOrEqual(8);
      expect(kept.length).toBeLessThanOrEqual(10);
      expect(kept).toEqual(newest(kept.length, 40));

      await bus.ensureStream({ name, subjects: [`${name}.>`], maxBytes: 3 * 1024 });
      const after = await readAll("d2");
      expect(after.length).toBeGreaterThanOrEqual(1);
      expect(after.length).toBeLessThanOrEqual(3);
      expect(after).toEqual(newest(after.length, 40));
    });

    it("redelivers after nak with a delay, counting deliveries", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
      await bus.publishDurable(`${name}.job`, enc("j"));
      const c = await bus.consumer(name, { durable: "w", ackWaitMs: 30_000 });
      const m1 = await mustNext(c);
      await m1.nak();
      const m2 = await mustNext(c);
      expect([m2.seq, m2.deliveryCount]).toEqual([m1.seq, 2]);
      const t0 = Date.now();
      await m2.nak(400);
      const m3 = await mustNext(c);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
      expect(m3.deliveryCount).toBe(3);
      await m3.ack();
      expect(await c.next({ timeoutMs: 0 })).toBeNull();
      await c.close();
    });

    it("redelivers unacknowledged messages on the backoff schedule, then dead-letters after maxDeliver", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
      const backoffMs = [200, 600];
      const c = await bus.consumer(name, { durable: "bo", maxDeliver: 3, backoffMs });
      const dlq = await bus.consumer(DLQ_STREAM, { durable: uniq("dlq"), filterSubject: deadLetterSubject(name, "bo"), deliverPolicy: "new" });
      await bus.publishDurable(`${name}.job`, enc("poison"), { headers: { "x-job": "p1" } });
      const times: number[] = [];
      for (let i = 1; i <= 3; i++) {
        const m = await mustNext(c);
        times.push(Date.now());
        expect(m.deliveryCount).toBe(i);
        // never acked: the ack wait (backoff) expires
      }
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(150);
      expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(500);
      // The fourth attempt never comes; the message moves to the dead-letter stream instead.
      const pulling = c.next({ timeoutMs: 3000 });
      const dead = await mustNext(dlq, 15_000);
      expect(await pulling).toBeNull();
      expect(dec(dead.data)).toBe("poison");
      expect(dead.headers[DLQ_HEADER.reason]).toBe("max_deliver");
      expect(dead.headers[DLQ_HEADER.stream]).toBe(name);
      expect(dead.headers[DLQ_HEADER.subject]).toBe(`${name}.job`);
      expect(dead.headers[DLQ_HEADER.deliveries]).toBe("3");
      expect(dead.headers["x-job"]).toBe("p1");
      await dead.ack();
      await c.close();
      await dlq.close();
    });

    it("term() dead-letters at once with reason terminated", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
      const c = await bus.consumer(name, { durable: "t", ackWaitMs: 500 });
      const dlq = await bus.consumer(DLQ_STREAM, { durable: uniq("dlq"), filterSubject: deadLetterSubject(name, "t"), deliverPolicy: "new" });
      await bus.publishDurable(`${name}.job`, enc("bad"));
      const m = await mustNext(c);
      await m.term();
      const dead = await mustNext(dlq);
      expect(dead.headers[DLQ_HEADER.reason]).toBe("terminated");
      await dead.ack();
      // Not redelivered even after the ack wait has long passed.
      expect(await c.next({ timeoutMs: 1500 })).toBeNull();
      await c.close();
      await dlq.close();
    });

    it("working() keeps a long job from being redelivered", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
      const c = await bus.consumer(name, { durable: "slow", ackWaitMs: 1000 });
      await bus.publishDurable(`${name}.job`, enc("long"));
      const m = await mustNext(c);
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 500));
        await m.working();
      }
      // 1.5 s after delivery with a 1 s ack wait, the message is still ours.
      expect(await c.next({ timeoutMs: 0 })).toBeNull();
      await m.ack();
      await c.close();
    });

    it("fails over: a message held by a consumer that died goes to the other consumer, once", async () => {
      const { backend, bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
      const other = await backend.open();
      const a = await bus.consumer(name, { durable: "grp", ackWaitMs: 800 });
      const b = await other.consumer(name, { durable: "grp", ackWaitMs: 800 });
      await bus.publishDurable(`${name}.job`, enc("j1"));
      const held = await mustNext(a);
      await a.close(); // dies without acknowledging
      const taken = await mustNext(b);
      expect([dec(taken.data), taken.seq, taken.deliveryCount]).toEqual(["j1", held.seq, 2]);
      await taken.ack();
      expect(await b.next({ timeoutMs: 1500 })).toBeNull();
      expect(await b.info()).toMatchObject({ numPending: 0, numAckPending: 0 });
      await b.close();
      await other.close();
    });

    it("next() honours its AbortSignal", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`] });
      const c = await bus.consumer(name, { durable: "ab" });
      const ac = new AbortController();
      const p = c.next({ timeoutMs: 20_000, signal: ac.signal });
      setTimeout(() => ac.abort(), 50);
      await expect(p).rejects.toMatchObject({ code: Code.Canceled });
      await c.close();
    });

    it("rejects a backoff list not shorter than maxDeliver", async () => {
      const { bus } = get();
      const name = uniq("S");
      await bus.ensureStream({ name, subjects: [`${name}.>`] });
      await expect(bus.consumer(name, { durable: "x", maxDeliver: 2, backoffMs: [100, 200] })).rejects.toMatchObject({ code: Code.InvalidArgument });
    });
  });
}

export function restartSuite(get: () => { backend: BusBackend; bus: Bus }, reopen: () => Promise<Bus>): void {
  describe("durability across restart", () => {
    it("keeps streams, unacknowledged messages, consumer positions and KV", async () => {
      const { backend, bus } = get();
      const name = uniq("R");
      await bus.ensureStream({ name, subjects: [`${name}.>`], retention: "workqueue" });
      for (const s of ["a", "b", "c"]) await bus.publishDurable(`${name}.x`, enc(s), { msgId: `id-${s}` });
      const c = await bus.consumer(name, { durable: "keep", ackWaitMs: 1000 });
      const first = await mustNext(c);
      await first.ack();
      const kv = await bus.kv(uniq("rkv"));
      await kv.put("k", enc("v"));
      await backend.restart();
      const bus2 = await reopen();
      const c2 = await bus2.consumer(name, { durable: "keep", ackWaitMs: 1000 });
      const got: string[] = [];
      for (let i = 0; i < 2; i++) {
        const m = await mustNext(c2, 15_000);
        got.push(dec(m.data));
        await m.ack();
      }
      expect(got).toEqual(["b", "c"]);
      expect(await c2.next({ timeoutMs: 0 })).toBeNull();
      const kv2 = await bus2.kv(kv.bucket);
      expect(dec((await kv2.get("k"))!.value)).toBe("v");
      await c2.close();
    });
  });
}
