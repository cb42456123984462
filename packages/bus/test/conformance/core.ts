import { describe, expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { type Bus, type BusMsg } from "../../src/index.js";
import { dec, enc, uniq, type BusBackend } from "./backend.js";

async function take(it: AsyncIterator<BusMsg>, n: number): Promise<BusMsg[]> {
  const out: BusMsg[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

export function coreSuite(get: () => { backend: BusBackend; bus: Bus }): void {
  describe("core publish/subscribe", () => {
    it("routes by exact subject and the * and > wildcards", async () => {
      const { bus } = get();
      const p = uniq("c");
      const exact = bus.subscribe(`${p}.a.b`);
      const star = bus.subscribe(`${p}.*.b`);
      const tail = bus.subscribe(`${p}.>`);
      await bus.flush();
      await bus.publish(`${p}.a.b`, enc("1"));
      await bus.publish(`${p}.x.b`, enc("2"));
      await bus.publish(`${p}.a.b.c`, enc("3"));
      await bus.publish(`other.${p}`, enc("never"));
      await bus.publish(`${p}.end`, enc("4"));
      const [e] = await take(exact[Symbol.asyncIterator](), 1);
      expect(dec(e!.data)).toBe("1");
      const s = await take(star[Symbol.asyncIterator](), 2);
      expect(s.map((m) => dec(m.data))).toEqual(["1", "2"]);
      const t = await take(tail[Symbol.asyncIterator](), 4);
      expect(t.map((m) => `${m.subject}=${dec(m.data)}`)).toEqual([`${p}.a.b=1`, `${p}.x.b=2`, `${p}.a.b.c=3`, `${p}.end=4`]);
      await Promise.all([exact.close(), star.close(), tail.close()]);
    });

    it("carries headers with lower-case names", async () => {
      const { bus } = get();
      const s = uniq("h");
      const sub = bus.subscribe(s);
      await bus.flush();
      await bus.publish(s, enc("x"), { headers: { "X-Trace-Me": "yes", priority: "7" } });
      const [m] = await take(sub[Symbol.asyncIterator](), 1);
      expect(m!.headers["x-trace-me"]).toBe("yes");
      expect(m!.headers["priority"]).toBe("7");
      await sub.close();
    });

    it("gives each message to one member of a queue group", async () => {
      const { bus } = get();
      const s = uniq("q");
      const a = bus.subscribe(s, { queue: "workers" });
      const b = bus.subscribe(s, { queue: "workers" });
      const all = bus.subscribe(s);
      await bus.flush();
      for (let i = 0; i < 20; i++) await bus.publish(s, enc(String(i)));
      const everyone = await take(all[Symbol.asyncIterator](), 20);
      expect(everyone).toHaveLength(20);
      await bus.flush();
      // Close both group members, then drain what they buffered: together exactly the 20 messages.
      const got: string[] = [];
      for (const sub of [a, b]) {
        await sub.close();
        for await (const m of sub) got.push(dec(m.data));
      }
      expect(got.sort((x, y) => Number(x) - Number(y))).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
      await all.close();
    });

    it("rejects invalid subjects with InvalidArgument", async () => {
      const { bus } = get();
      await expect(bus.publish("a.*.b", enc("x"))).rejects.toMatchObject({ code: Code.InvalidArgument });
      expect(() => bus.subscribe("a.>.b")).toThrow(BurrowError);
      expect(() => bus.subscribe("a..b")).toThrow(BurrowError);
    });

    it("ends iteration when the subscription is closed", async () => {
      const { bus } = get();
      const sub = bus.subscribe(uniq("z"));
      const it = sub[Symbol.asyncIterator]();
      const pending = it.next();
      await sub.close();
      expect((await pending).done).toBe(true);
    });
  });

  describe("request/reply", () => {
    it("answers a request", async () => {
      const { bus } = get();
      const s = uniq("svc");
      const sub = bus.subscribe(s);
      await bus.flush();
      const server = (async () => {
        for await (const m of sub) await m.respond(enc(`hello ${dec(m.data)}`), { headers: { "x-served-by": "t" } });
      })();
      const r = await bus.request(s, enc("bob"), { timeoutMs: 5000 });
      expect(dec(r.data)).toBe("hello bob");
      expect(r.headers["x-served-by"]).toBe("t");
      await sub.close();
      await server;
    });

    it("fails with Unavailable when nobody listens and DeadlineExceeded when nobody answers", async () => {
      const { bus } = get();
      await expect(bus.request(uniq("nobody"), enc("?"), { timeoutMs: 2000 })).rejects.toMatchObject({ code: Code.Unavailable });
      const s = uniq("silent");
      const sub = bus.subscribe(s);
      await bus.flush();
      await expect(bus.request(s, enc("?"), { timeoutMs: 200 })).rejects.toMatchObject({ code: Code.DeadlineExceeded });
      await sub.close();
    });

    it("is cancelled by its AbortSignal", async () => {
      const { bus } = get();
      const s = uniq("slow");
      const sub = bus.subscribe(s);
      await bus.flush();
      const ac = new AbortController();
      const p = bus.request(s, enc("?"), { timeoutMs: 10_000, signal: ac.signal });
      ac.abort();
      await expect(p).rejects.toMatchObject({ code: Code.Canceled });
      await sub.close();
    });
  });

  describe("kv", () => {
    it("supports create, compare-and-set update, delete and keys", async () => {
      const { bus } = get();
      const kv = await bus.kv(uniq("kv"));
      const r1 = await kv.create("a", enc("1"));
      await expect(kv.create("a", enc("again"))).rejects.toMatchObject({ code: Code.AlreadyExists });
      const r2 = await kv.update("a", enc("2"), r1);
      expect(r2).toBeGreaterThan(r1);
      await expect(kv.update("a", enc("3"), r1)).rejects.toMatchObject({ code: Code.Aborted, reason: "revision_conflict" });
      expect(dec((await kv.get("a"))!.value)).toBe("2");
      await kv.put("b.c", enc("x"));
      expect(await kv.keys()).toEqual(["a", "b.c"]);
      await kv.delete("a");
      expect(await kv.get("a")).toBeNull();
      expect(await kv.keys()).toEqual(["b.c"]);
      await kv.put("0", enc("first"));
      expect((await kv.entries()).map((e) => [e.key, dec(e.value)])).toEqual([["0", "first"], ["b.c", "x"]]);
      expect((await kv.entries()).find((e) => e.key === "b.c")!.revision).toBe((await kv.get("b.c"))!.revision);
      await kv.create("a", enc("reborn"));
      expect(dec((await kv.get("a"))!.value)).toBe("reborn");
    });

    it("hides entries older than the bucket TTL", async () => {
      const { bus } = get();
      const kv = await bus.kv(uniq("ttl"), { ttlMs: 1000 });
      await kv.put("x", enc("1"));
      expect(await kv.get("x")).not.toBeNull();
      const deadline = Date.now() + 10_000;
      while ((await kv.get("x")) !== null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await kv.get("x")).toBeNull();
      expect(await kv.keys()).toEqual([]);
    });
  });
}
