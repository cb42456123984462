import { describe, expect, it } from "vitest";
import { GroupWorker, Heartbeater, LivenessMonitor, WorkQueue, sendHeartbeat, type Bus, type LivenessEvent } from "../../src/index.js";
import { dec, enc, uniq, type BusBackend } from "./backend.js";

export function livenessSuite(get: () => { backend: BusBackend; bus: Bus }): void {
  describe("liveness and failover", () => {
    it("marks agents up while they heartbeat and down after the window", async () => {
      const { bus } = get();
      const id = uniq("agent");
      const monitor = await LivenessMonitor.open(bus, { windowMs: 600, pollMs: 50 });
      const events = monitor.events();
      const it = events[Symbol.asyncIterator]();
      const hb = new Heartbeater(bus, { agentId: id, group: "g1" }, 100);
      const next = async (): Promise<LivenessEvent> => {
        for (;;) {
          const r = await it.next();
          if (r.done) throw new Error("ended");
          if (r.value.agent.agentId === id) return r.value;
        }
      };
      const up = await next();
      expect(up).toMatchObject({ type: "up", agent: { agentId: id, group: "g1" } });
      await hb.close();
      const down = await next();
      expect(down.type).toBe("down");
      expect(monitor.status(id)?.state).toBe("down");
      await sendHeartbeat(bus, { agentId: id, group: "g1" });
      expect((await next()).type).toBe("up");
      await monitor.close();
    });

    it("moves a dead active member's work to the standby with nothing lost or done twice", async () => {
      const { backend, bus } = get();
      const other = await backend.open();
      const name = uniq("gq");
      const group = uniq("grp");
      const q1 = await WorkQueue.open(bus, { name, ackWaitMs: 800, pollMs: 50 });
      const q2 = await WorkQueue.open(other, { name, ackWaitMs: 800, pollMs: 50 });
      const done: string[] = [];
      let took: (v: string) => void;
      const tookFirst = new Promise<string>((r) => (took = r));
      const active = await GroupWorker.start({
        bus, agentId: uniq("act"), group, queue: q1, windowMs: 600, heartbeatMs: 100,
        handler: (m, signal) => {
          took(dec(m.data));
          // Hangs like a stuck agent until it dies.
          return new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("died")), { once: true }));
        },
      });
      // Wait until the first member leads before starting the standby, so the roles are known.
      while (!active.isActive) await new Promise((r) => setTimeout(r, 20));
      const standby = await GroupWorker.start({
        bus: other, agentId: uniq("stb"), group, queue: q2, windowMs: 600, heartbeatMs: 100,
        handler: async (m) => {
          done.push(`${dec(m.data)}#${m.attempt}`);
        },
      });
      for (const j of ["j1", "j2", "j3"]) await q1.enqueue(enc(j), { msgId: j });
      expect(await tookFirst).toBe("j1");
      expect(standby.isActive).toBe(false);
      await active.halt(); // crash: no ack, no lease release
      const deadline = Date.now() + 20_000;
      while (done.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(standby.isActive).toBe(true);
      expect(done.sort()).toEqual(["j1#2", "j2#1", "j3#1"]);
      // Nothing left over, nothing comes again.
      const check = await q2.consumer();
      expect(await check.next({ timeoutMs: 1500 })).toBeNull();
      await check.close();
      await standby.close();
      await other.close();
    });
  });
}
