import { create } from "@bufbuild/protobuf";
import { Code, envelopePb } from "@burrow/protocol";
import { describe, expect, it } from "vitest";
import {
  AgentMessenger, BusKeyRegistry, encodeEnvelope, generateAgentKey, inboxSubject, sealEnvelope, type Bus, type ReceivedMessage,
} from "../../src/index.js";
import { dec, enc, uniq, type BusBackend } from "./backend.js";

async function first(m: AgentMessenger, n = 1, timeoutMs = 10_000): Promise<ReceivedMessage[]> {
  const out: ReceivedMessage[] = [];
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), timeoutMs);
  try {
    for await (const r of m.messages({ signal: ac.signal })) {
      out.push(r);
      await r.ack();
      if (out.length >= n) break;
    }
  } finally {
    clearTimeout(t);
  }
  return out;
}

export function messagingSuite(get: () => { backend: BusBackend; bus: Bus }): void {
  describe("agent messaging", () => {
    async function agents(bus: Bus, names: string[], groups: Record<string, string[]> = {}) {
      const registry = await BusKeyRegistry.open(bus);
      const out: Record<string, AgentMessenger> = {};
      for (const n of names) {
        const key = generateAgentKey(n);
        await registry.register(n, key.publicKey);
        out[n] = await AgentMessenger.open({ bus, key, registry, groups: groups[n] ?? [], ackWaitMs: 2000 });
      }
      return { registry, out, close: async () => { for (const m of Object.values(out)) await m.close(); } };
    }

    it("routes DIRECT to one agent, BROADCAST to all, MULTICAST to the group", async () => {
      const { bus } = get();
      const [a, b, c] = [uniq("a"), uniq("b"), uniq("c")];
      const g = uniq("g");
      const { out, close } = await agents(bus, [a, b, c], { [b]: [g], [c]: [g] });
      await out[a]!.sendDirect(b, enc("to-b"));
      await out[a]!.broadcast("news", enc("hello-all"));
      await out[a]!.multicast(g, enc("to-group"));
      const gotB = await first(out[b]!, 3);
      const gotC = await first(out[c]!, 2);
      expect(gotB.map((m) => dec(m.payload)).sort()).toEqual(["hello-all", "to-b", "to-group"]);
      expect(gotC.map((m) => dec(m.payload)).sort()).toEqual(["hello-all", "to-group"]);
      const direct = gotB.find((m) => dec(m.payload) === "to-b")!;
      expect(direct.route).toEqual({ type: "direct", to: b });
      expect(direct.from).toBe(a);
      expect(direct.forMe).toBe(true);
      const multi = gotC.find((m) => dec(m.payload) === "to-group")!;
      expect(multi.route).toMatchObject({ type: "multicast", group: g });
      // a is not in g and got only the broadcast it sent itself
      const gotA = await first(out[a]!, 1);
      expect(dec(gotA[0]!.payload)).toBe("hello-all");
      await close();
    });

    it("compresses large payloads and restores them", async () => {
      const { bus } = get();
      const [a, b] = [uniq("a"), uniq("b")];
      const { out, close } = await agents(bus, [a, b]);
      const big = "x".repeat(50_000);
      await out[a]!.sendDirect(b, enc(big), { contentType: "text/plain" });
      const [m] = await first(out[b]!, 1);
      expect(m!.envelope.compressed).toBe(true);
      expect(m!.envelope.payload.length).toBeLessThan(5_000);
      expect(dec(m!.payload)).toBe(big);
      expect(m!.envelope.contentType).toBe("text/plain");
      await close();
    });

    it("records hops through relays and enforces the hop limit", async () => {
      const { bus } = get();
      const [a, r1, r2, b] = [uniq("a"), uniq("r1"), uniq("r2"), uniq("b")];
      const { out, close } = await agents(bus, [a, r1, r2, b]);
      await out[a]!.sendDirect(b, enc("via relays"), { via: r1, maxHops: 2 });
      const [atR1] = await first(out[r1]!, 1);
      expect(atR1!.forMe).toBe(false);
      await out[r1]!.forward(atR1!, { via: r2 });
      const [atR2] = await first(out[r2]!, 1);
      await out[r2]!.forward(atR2!);
      const [atB] = await first(out[b]!, 1);
      expect(dec(atB!.payload)).toBe("via relays");
      expect(atB!.envelope.hopCount).toBe(2);
      expect(atB!.envelope.hops).toEqual([r1, r2]);
      // One more relay would pass max_hops = 2.
      await expect(out[b]!.forward(atB!)).rejects.toMatchObject({ code: Code.ResourceExhausted, reason: "hop_limit" });
      // A hand-made envelope claiming more hops than allowed is rejected on receipt.
      const key = generateAgentKey(a);
      await (await BusKeyRegistry.open(bus)).register(a, key.publicKey);
      const e = sealEnvelope(key, { type: "direct", to: b }, enc("too far"), { maxHops: 1 });
      const tampered = create(envelopePb.EnvelopeSchema, { ...e, hopCount: 2, hops: ["x", "y"] });
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(tampered));
      await out[a]!.sendDirect(b, enc("marker"));
      const [next] = await first(out[b]!, 1);
      expect(dec(next!.payload)).toBe("marker");
      expect(out[b]!.verifier.rejected.hop_limit).toBe(1);
      await close();
    });

    it("rejects expired messages", async () => {
      const { bus } = get();
      const [a, b] = [uniq("a"), uniq("b")];
      const { registry, out, close } = await agents(bus, [a, b]);
      const key = generateAgentKey(a);
      await registry.register(a, key.publicKey);
      const old = sealEnvelope(key, { type: "direct", to: b }, enc("old"), { ttlMs: 1000, now: Date.now() - 5000 });
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(old));
      await out[a]!.sendDirect(b, enc("fresh"));
      const [m] = await first(out[b]!, 1);
      expect(dec(m!.payload)).toBe("fresh");
      expect(out[b]!.verifier.rejected.expired).toBe(1);
      await close();
    });

    it("rejects forged, tampered, unknown-key and replayed messages and counts them", async () => {
      const { bus } = get();
      const [a, b, mallory] = [uniq("a"), uniq("b"), uniq("m")];
      const { registry, out, close } = await agents(bus, [a, b]);
      const realKey = generateAgentKey(a);
      await registry.register(a, realKey.publicKey);
      // forged: signed by mallory's key but claiming to be from a with a's key id
      const malloryKey = generateAgentKey(a);
      const forged = sealEnvelope({ ...malloryKey, keyId: realKey.keyId }, { type: "direct", to: b }, enc("forged"));
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(forged));
      // tampered: a's genuine message with its payload changed in transit
      const genuine = sealEnvelope(realKey, { type: "direct", to: b }, enc("pay 1"));
      const tampered = create(envelopePb.EnvelopeSchema, { ...genuine, payload: enc("pay 1000") });
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(tampered));
      // unknown key: an agent nobody registered
      const stranger = generateAgentKey(mallory);
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(sealEnvelope(stranger, { type: "direct", to: b }, enc("who?"))));
      // replayed: the same genuine envelope published twice (as a new stream message each time)
      const once = sealEnvelope(realKey, { type: "direct", to: b }, enc("once"));
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(once));
      await bus.publishDurable(inboxSubject(b), encodeEnvelope(once));
      await out[a]!.sendDirect(b, enc("marker"));
      const got = await first(out[b]!, 2);
      expect(got.map((m) => dec(m.payload))).toEqual(["once", "marker"]);
      expect(out[b]!.verifier.rejected).toMatchObject({ signature: 2, unknown_key: 1, replayed: 1 });
      await close();
    });

  });
}
