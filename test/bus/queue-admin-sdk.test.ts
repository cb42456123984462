// BusClient.queue's admin methods against the real server: depth, dead letters page by page, requeue (one and all),
// drop (one and all), 404 for a queue that does not exist, and a call that honours its AbortSignal.
import { randomBytes } from "node:crypto";
import { BurrowApiError, BusClient } from "@burrow/sdk";
import { afterAll, describe, expect, inject, it } from "vitest";

const env = inject("burrow");
const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
const queue = `sdk-admin-${randomBytes(4).toString("hex")}`;

afterAll(async () => {
  await client.queue.dropAll(queue).catch(() => undefined);
});

/** Takes and nacks until the queue hands out nothing: everything in it is dead-lettered. */
async function deadLetterAll(): Promise<void> {
  for (;;) {
    const m = await client.queue.next(queue, { timeoutMs: 2000 });
    if (!m) return;
    await m.nack({ delayMs: 0 });
  }
}

describe("BusClient queue admin", () => {
  it("reads depth and dead letters, requeues and drops them", { timeout: 120_000 }, async () => {
    for (const body of ["one", "two", "three"]) await client.queue.enqueue(queue, body);
    expect(await client.queue.depth(queue)).toEqual({ name: queue, ready: 3, inFlight: 0, deadLetters: 0 });
    expect((await client.queue.list()).find((q) => q.name === queue)).toEqual({ name: queue, ready: 3, inFlight: 0, deadLetters: 0 });

    await deadLetterAll();
    await expect.poll(async () => (await client.queue.depth(queue)).deadLetters, { timeout: 10_000 }).toBe(3);

    const first = await client.queue.deadLetters(queue, { limit: 2 });
    expect(first.total).toBe(3);
    expect(first.items.map((d) => d.text)).toEqual(["one", "two"]);
    expect(first.next).not.toBeNull();
    const rest = await client.queue.deadLetters(queue, { after: first.next! });
    expect(rest.items.map((d) => d.text)).toEqual(["three"]);
    expect(rest.next).toBeNull();
    const one = first.items[0]!;
    expect(one.attempts).toBeGreaterThan(1);
    expect(one.time).toBeInstanceOf(Date);
    expect(new TextDecoder().decode(one.data)).toBe("one");
    expect((await client.queue.deadLetter(queue, one.seq)).text).toBe("one");

    // One back on the queue: a consumer gets it as a first attempt.
    const { seq } = await client.queue.requeue(queue, one.seq);
    expect(seq).toBeGreaterThan(0);
    const again = await client.queue.next(queue, { timeoutMs: 5000 });
    expect(again?.text).toBe("one");
    expect(again?.attempt).toBe(1);
    await again!.ack();

    await client.queue.drop(queue, first.items[1]!.seq);
    expect((await client.queue.deadLetters(queue)).items.map((d) => d.text)).toEqual(["three"]);
    expect(await client.queue.requeueAll(queue)).toBe(1);
    await deadLetterAll();
    await expect.poll(async () => (await client.queue.depth(queue)).deadLetters, { timeout: 10_000 }).toBe(1);
    expect(await client.queue.dropAll(queue)).toBe(1);
    expect(await client.queue.depth(queue)).toEqual({ name: queue, ready: 0, inFlight: 0, deadLetters: 0 });
  });

  it("answers 404 for a queue that does not exist, and stops on its signal", async () => {
    const missing = `sdk-none-${randomBytes(4).toString("hex")}`;
    const err = await client.queue.depth(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BurrowApiError);
    expect((err as BurrowApiError).status).toBe(404);
    const aborted = AbortSignal.abort();
    await expect(client.queue.list({ signal: aborted })).rejects.toThrow(/abort/i);
  });
});
