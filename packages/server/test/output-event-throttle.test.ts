// The merge window and byte budget in front of `proc.output` events, on a fake clock so the counts are exact.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { OutputEventThrottle, resolveOutputEventLimits, type OutputChunk, type OutputEventLimits } from "../src/bus/output-event-throttle.js";

function throttle(limits: Partial<OutputEventLimits>) {
  const batches: OutputChunk[][] = [];
  const t = new OutputEventThrottle(resolveOutputEventLimits(limits, {}), async (b) => {
    batches.push(b);
  });
  return { t, batches };
}

const text = (c: OutputChunk) => c.data.toString("utf8");

describe("OutputEventThrottle", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("merges one stream's chunks within a window into one event", async () => {
    const { t, batches } = throttle({ windowMs: 100 });
    for (const s of ["a", "b", "c"]) t.push("stdout", Buffer.from(s));
    t.push("stderr", Buffer.from("oops"));
    await vi.advanceTimersByTimeAsync(100);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.map((c) => [c.stream, text(c), c.droppedBytes])).toEqual([["stdout", "abc", 0], ["stderr", "oops", 0]]);
  });

  it("keeps the newest bytes the budget allows and counts the rest", async () => {
    const { t, batches } = throttle({ windowMs: 100, bytesPerSecond: 1000, burstBytes: 300 });
    // 50 chunks of 100 bytes, each naming its index.
    for (let i = 0; i < 50; i++) t.push("stdout", Buffer.from(String(i).padStart(100, ".")));
    await vi.advanceTimersByTimeAsync(100);
    const first = batches[0]![0]!;
    expect(first.data.length).toBe(300);
    expect(text(first).endsWith("49")).toBe(true);
    expect(first.droppedBytes).toBe(4700);
    // Sustained: 100 bytes per 100 ms window.
    for (let i = 0; i < 20; i++) t.push("stdout", Buffer.alloc(100, 120));
    await vi.advanceTimersByTimeAsync(100);
    expect(batches[1]![0]!).toMatchObject({ droppedBytes: 1900 });
    expect(batches[1]![0]!.data.length).toBe(100);
  });

  it("flush() publishes what is pending at once, after what was already on its way", async () => {
    const { t, batches } = throttle({ windowMs: 1000 });
    t.push("stdout", Buffer.from("first"));
    await t.flush();
    t.push("stdout", Buffer.from("last"));
    await t.flush();
    expect(batches.map((b) => b.map(text))).toEqual([["first"], ["last"]]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(batches).toHaveLength(2);
  });

  it("refuses bad limits with the setting named", () => {
    expect(() => resolveOutputEventLimits({}, { BURROW_OUTPUT_EVENT_BYTES_PER_SEC: "-1" })).toThrow(/BURROW_OUTPUT_EVENT_BYTES_PER_SEC/);
    expect(resolveOutputEventLimits({}, { BURROW_OUTPUT_EVENT_BURST_BYTES: "1024" }).burstBytes).toBe(1024);
  });
});
