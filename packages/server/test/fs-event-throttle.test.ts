// The per-sandbox merge window and token bucket in front of the bus, on a fake clock so the counts are exact.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { resolveFsEventLimits, type FsEventLimits } from "../src/bus/fs-event-limits.js";
import { FsEventThrottle, type FsBatch } from "../src/bus/fs-event-throttle.js";

function throttle(limits: Partial<FsEventLimits>) {
  const batches: FsBatch[] = [];
  const t = new FsEventThrottle(resolveFsEventLimits(limits, {}), async (b) => {
    batches.push(b);
  });
  return { t, batches };
}

describe("FsEventThrottle", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("merges changes of one type to one path within a window, ordered by their last change", async () => {
    const { t, batches } = throttle({ windowMs: 100 });
    t.push("create", "/w/a");
    for (let i = 0; i < 500; i++) t.push("write", "/w/a");
    t.push("create", "/w/b");
    t.push("remove", "/w/a");
    t.push("write", "/w/b");
    await vi.advanceTimersByTimeAsync(99);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.overflow).toBeUndefined();
    expect(batches[0]!.changes.map((c) => [c.type, c.path, c.count])).toEqual([
      ["create", "/w/a", 1],
      ["write", "/w/a", 500],
      ["create", "/w/b", 1],
      ["remove", "/w/a", 1],
      ["write", "/w/b", 1],
    ]);
  });

  it("publishes at most the bucket, keeps the newest changes and summarises the rest in one overflow", async () => {
    const { t, batches } = throttle({ windowMs: 100, perSecond: 100, burst: 50 });
    for (let i = 0; i < 1000; i++) t.push("create", `/w/f${i}`);
    await vi.advanceTimersByTimeAsync(100);
    expect(batches).toHaveLength(1);
    const first = batches[0]!;
    // The bucket starts full and holds no more than the burst.
    expect(first.changes).toHaveLength(50);
    expect(first.changes.at(-1)!.path).toBe("/w/f999");
    expect(first.changes[0]!.path).toBe("/w/f950");
    expect(first.overflow).toMatchObject({ dropped: 950, droppedByType: { create: 950 }, path: "/w/f949" });

    // A sustained flood gets the refill rate: 10 per 100 ms window.
    for (let w = 0; w < 10; w++) {
      for (let i = 0; i < 100; i++) t.push("write", `/w/g${w}-${i}`);
      await vi.advanceTimersByTimeAsync(100);
    }
    const later = batches.slice(1);
    expect(later).toHaveLength(10);
    for (const b of later) {
      expect(b.changes).toHaveLength(10);
      expect(b.overflow?.dropped).toBe(90);
    }
    const published = batches.reduce((n, b) => n + b.changes.length + (b.overflow ? 1 : 0), 0);
    const accounted = batches.reduce((n, b) => n + b.changes.reduce((m, c) => m + c.count, 0) + (b.overflow?.dropped ?? 0), 0);
    expect(published).toBe(50 + 1 + 10 * 11);
    expect(accounted).toBe(2000);
  });

  it("drops the least recently changed paths past maxPending, counting them", async () => {
    const { t, batches } = throttle({ windowMs: 100, burst: 1000, maxPending: 10 });
    for (let i = 0; i < 25; i++) t.push("write", `/w/${i}`);
    await vi.advanceTimersByTimeAsync(100);
    expect(batches[0]!.changes.map((c) => c.path)).toEqual(Array.from({ length: 10 }, (_, i) => `/w/${15 + i}`));
    expect(batches[0]!.overflow).toMatchObject({ dropped: 15, path: "/w/14" });
  });

  it("waits for a slow publish before the next window, and close() publishes what is pending", async () => {
    let release: () => void = () => undefined;
    const batches: FsBatch[] = [];
    const t = new FsEventThrottle(resolveFsEventLimits({ windowMs: 100 }, {}), (b) => {
      batches.push(b);
      return new Promise<void>((resolve) => (release = resolve));
    });
    t.push("create", "/w/1");
    await vi.advanceTimersByTimeAsync(100);
    t.push("create", "/w/2");
    await vi.advanceTimersByTimeAsync(500);
    expect(batches).toHaveLength(1);
    release();
    await vi.advanceTimersByTimeAsync(100);
    expect(batches.map((b) => b.changes.map((c) => c.path))).toEqual([["/w/1"], ["/w/2"]]);
    release();
    t.push("remove", "/w/2");
    const closing = t.close();
    release();
    await closing;
    expect(batches.at(-1)!.changes.map((c) => [c.type, c.path])).toEqual([["remove", "/w/2"]]);
    t.push("create", "/w/3");
    await vi.advanceTimersByTimeAsync(1000);
    expect(batches).toHaveLength(3);
  });

  it("takes limits from the environment and refuses bad ones", () => {
    expect(resolveFsEventLimits({}, { BURROW_FS_EVENTS_PER_SEC: "50", BURROW_FS_EVENT_BURST: "70" })).toMatchObject({ perSecond: 50, burst: 70, windowMs: 100 });
    expect(resolveFsEventLimits({ perSecond: 5 }, { BURROW_FS_EVENTS_PER_SEC: "50" }).perSecond).toBe(5);
    expect(() => resolveFsEventLimits({}, { BURROW_FS_EVENT_WINDOW_MS: "soon" })).toThrow(/BURROW_FS_EVENT_WINDOW_MS/);
    expect(() => resolveFsEventLimits({ burst: 0 })).toThrow(/burst/);
  });
});
