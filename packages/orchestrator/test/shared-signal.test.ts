// The signal the children of a fork or branch share: it follows the caller's, takes any number of listeners without
// Node's MaxListenersExceededWarning, and stops following once released.
import { afterEach, describe, expect, it } from "vitest";
import { shareSignal } from "../src/shared-signal.js";

describe("shareSignal", () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on("warning", onWarning);
  afterEach(() => {
    warnings.length = 0;
  });

  it("lets 100 operations listen without a MaxListeners warning, and aborts them all with the caller's reason", async () => {
    const caller = new AbortController();
    const shared = shareSignal(caller.signal);
    let aborted = 0;
    for (let i = 0; i < 100; i++) shared.signal?.addEventListener("abort", () => aborted++);
    caller.abort(new Error("client went away"));
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(aborted).toBe(100);
    expect((shared.signal?.reason as Error).message).toBe("client went away");
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    shared.release();
  });

  it("the same listeners on a caller's own signal do warn (what the shared signal avoids)", async () => {
    // Node's own printer of warnings is a 'warning' listener too: set aside while the warning is provoked, so that it
    // does not print in every test run's output and read as a leak.
    const printers = process.listeners("warning").filter((l) => l !== onWarning);
    for (const printer of printers) process.off("warning", printer);
    try {
      const caller = new AbortController();
      for (let i = 0; i < 11; i++) caller.signal.addEventListener("abort", () => undefined);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.some((w) => w.name === "MaxListenersExceededWarning")).toBe(true);
    } finally {
      for (const printer of printers) process.on("warning", printer);
    }
  });

  it("is aborted at once for an aborted caller, stops following after release, and is absent without one", () => {
    const done = new AbortController();
    done.abort("early");
    expect(shareSignal(done.signal).signal?.aborted).toBe(true);

    const caller = new AbortController();
    const shared = shareSignal(caller.signal);
    shared.release();
    caller.abort();
    expect(shared.signal?.aborted).toBe(false);

    expect(shareSignal(undefined).signal).toBeUndefined();
  });
});
