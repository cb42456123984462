// The bus inside the real server: sandbox lifecycle events arrive on their subjects, and the /burrow/v1 API
// publishes, subscribes and queues through the Burrow SDK.
import { describe, expect, inject, it } from "vitest";
import { Sandbox } from "e2b";
import { BusClient, type BusMessage } from "@burrow/sdk";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

/** Read on until a message matches; the iterator is advanced by hand so the subscription stays open. */
async function nextMatching(sub: AsyncIterable<BusMessage>, pred: (m: BusMessage) => boolean, timeoutMs = 20_000): Promise<BusMessage> {
  const iterator = sub[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const next = await iterator.next();
    if (next.done) break;
    if (pred(next.value)) return next.value;
  }
  throw new Error("no matching message");
}

/** Sum of a counter's samples on /metrics. */
async function busCounter(name: string): Promise<number> {
  const text = await (await fetch(`${env.apiUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith(name))
    .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
}

describe("bus in the server", () => {
  const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });

  it("publishes sandbox lifecycle events with metadata", async () => {
    const sub = await client.bus.subscribe("sbx.*.*.lifecycle.>");
    try {
      const sandbox = await Sandbox.create("base", { ...opts, metadata: { pipeline: "events-test" } });
      const created = await nextMatching(sub, (m) => m.subject.includes(sandbox.sandboxId) && m.subject.endsWith(".created"));
      const payload = JSON.parse(new TextDecoder().decode(created.data)) as { metadata: Record<string, string>; sandboxId: string };
      expect(payload.sandboxId).toBe(sandbox.sandboxId);
      expect(payload.metadata).toEqual({ pipeline: "events-test" });
      await sandbox.kill();
      await nextMatching(sub, (m) => m.subject.includes(sandbox.sandboxId) && m.subject.endsWith(".killed"));
    } finally {
      sub.close();
    }
  });

  it("routes published messages and work-queue items through the REST API", async () => {
    const sub = await client.bus.subscribe("agents.test.>");
    try {
      await client.bus.publish("agents.test.hello", new TextEncoder().encode("hi"));
      const message = await nextMatching(sub, () => true);
      expect(message.subject).toBe("agents.test.hello");
      expect(new TextDecoder().decode(message.data)).toBe("hi");
    } finally {
      sub.close();
    }
    const queue = `q${Date.now()}`;
    await client.queue.enqueue(queue, new TextEncoder().encode("low"), { priority: 1 });
    await client.queue.enqueue(queue, new TextEncoder().encode("high"), { priority: 9 });
    const first = await client.queue.next(queue, { timeoutMs: 5000 });
    expect(first && new TextDecoder().decode(first.data)).toBe("high");
    await first?.ack();
  });

  it("counts bus traffic on the server's /metrics", async () => {
    const before = await busCounter("burrow_bus_published_total");
    await client.bus.publish("agents.metrics.one", new TextEncoder().encode("x"));
    expect(await busCounter("burrow_bus_published_total")).toBeGreaterThan(before);
  });

  it("refuses requests without an API key in E2B's error shape", async () => {
    const res = await fetch(`${env.apiUrl}/burrow/v1/bus/publish`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 401 });
  });
});
