// The embedded store counts each stream's bytes with triggers; a bus file from before the count is counted once
// when it is opened, so a byte cap applies to what it already holds.
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EmbeddedBus } from "../src/index.js";
import { tempDir } from "./helpers/temp-dir.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("embedded stream byte counts", () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => dir.remove());

  it("counts a file written before byte counts existed, and a cap set afterwards trims it", async () => {
    const path = join(dir.path, "bus.db");
    const first = new EmbeddedBus({ path });
    await first.ensureStream({ name: "OLD", subjects: ["old.>"] });
    for (let i = 0; i < 50; i++) await first.publishDurable("old.x", enc(String(i).padStart(100, "-")), { headers: { "x-n": String(i) } });
    const counted = first.store.streamBytes("OLD");
    await first.close();

    // Make the file look like one from before the count: no column, no triggers.
    const raw = new Database(path);
    raw.exec("DROP TRIGGER messages_bytes_insert; DROP TRIGGER messages_bytes_delete; ALTER TABLE streams DROP COLUMN bytes;");
    const exact = (raw.prepare("SELECT SUM(length(CAST(subject AS BLOB)) + COALESCE(length(CAST(headers AS BLOB)), 0) + length(data)) AS n FROM messages WHERE stream = 'OLD'").get() as { n: number }).n;
    raw.close();
    expect(counted).toBe(exact);

    const reopened = new EmbeddedBus({ path });
    try {
      expect(reopened.store.streamBytes("OLD")).toBe(exact);
      await reopened.ensureStream({ name: "OLD", subjects: ["old.>"], maxBytes: Math.floor(exact / 5) });
      const left = reopened.store.streamBytes("OLD");
      expect(left).toBeLessThanOrEqual(Math.floor(exact / 5));
      // Trimmed to the newest that fit: at most one message's size under the cap.
      expect(left).toBeGreaterThan(Math.floor(exact / 5) - exact / 50);
    } finally {
      await reopened.close();
    }
  });

  it("goes back to zero when acknowledged work-queue messages are removed", async () => {
    const bus = new EmbeddedBus({ path: join(dir.path, "wq.db") });
    try {
      await bus.ensureStream({ name: "WQ", subjects: ["wq.>"], retention: "workqueue" });
      for (let i = 0; i < 10; i++) await bus.publishDurable("wq.job", enc("x".repeat(1000)));
      expect(bus.store.streamBytes("WQ")).toBe(10 * (6 + 1000));
      const c = await bus.consumer("WQ", { durable: "w" });
      for (let m = await c.next({ timeoutMs: 0 }); m; m = await c.next({ timeoutMs: 0 })) await m.ack();
      await c.close();
      expect(bus.store.streamBytes("WQ")).toBe(0);
    } finally {
      await bus.close();
    }
  });
});
