// The warm pool's bookkeeping of builds, with launches that hand back placeholder sandboxes: what real sandboxes
// cannot show in an end-to-end test (test/templates/pool-rebuild.test.ts has the real thing) — a stale sandbox is
// refused at take time even when no change was signalled, a launch of the old build is canceled, and a pool whose
// template is deleted empties and comes back with it.
import { describe, expect, it } from "vitest";
import { silentLogger } from "../src/logger.js";
import type { HostedSandbox } from "../src/sandbox-host.js";
import type { TemplateManifest } from "../src/templates/template-store.js";
import { WarmPool } from "../src/warm-pool.js";

function manifest(layers: string[], templateId = "tpl"): TemplateManifest {
  return {
    templateId,
    aliases: ["pooled"],
    layers,
    defaults: { cpuCount: 1, memoryMB: 256, diskMB: 512, pids: 128 },
    createdAt: new Date().toISOString(),
  };
}

/** A pool over a mutable "current manifest", recording what it launched and destroyed. */
function harness(size = 2) {
  let current: TemplateManifest | undefined = manifest(["layer-1"]);
  let n = 0;
  const launchedFrom = new Map<string, string[]>();
  const destroyed: string[] = [];
  const launchSignals: AbortSignal[] = [];
  let gate: Promise<void> | undefined;
  const pool = new WarmPool({
    template: "pooled",
    size,
    resolve: (ref) => (ref === "pooled" ? current : undefined),
    launch: async (template, signal) => {
      launchSignals.push(signal);
      if (gate) await Promise.race([gate, new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }))]);
      const sandboxId = `sb${++n}`;
      launchedFrom.set(sandboxId, [...template.layers]);
      return { record: { sandboxId } } as HostedSandbox;
    },
    destroy: async (sandbox) => void destroyed.push(sandbox.record.sandboxId),
    logger: silentLogger,
  });
  return {
    pool,
    launchedFrom,
    destroyed,
    launchSignals,
    setCurrent: (next: TemplateManifest | undefined) => (current = next),
    current: () => current,
    holdLaunches: () => {
      let release = () => undefined as void;
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

describe("warm pool builds", () => {
  it("hands out only sandboxes of the template's current build, even when the change was not signalled", async () => {
    const h = harness();
    await h.pool.waitFull();
    const old = h.current() as TemplateManifest;
    // A rebuild that the pool is not told about.
    h.setCurrent(manifest(["layer-2", "layer-1"]));
    expect(h.pool.take(old)).toBeUndefined();
    expect(h.pool.take(h.current() as TemplateManifest)).toBeUndefined();
    expect(h.pool.readyCount).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.destroyed.sort()).toEqual(["sb1", "sb2"]);

    h.pool.fill();
    await h.pool.waitFull();
    const taken = h.pool.take(h.current() as TemplateManifest);
    expect(taken && h.launchedFrom.get(taken.record.sandboxId)).toEqual(["layer-2", "layer-1"]);
    await h.pool.close();
  });

  it("serves another reference to the same build (a tag naming the same layers), and nothing else", async () => {
    const h = harness(1);
    await h.pool.waitFull();
    expect(h.pool.take(manifest(["layer-1"], "other-template"))).toBeUndefined();
    expect(h.pool.take(manifest(["layer-9"]))).toBeUndefined();
    expect(h.pool.readyCount).toBe(1);
    const sameLayersOtherBuild = { ...manifest(["layer-1"]), buildId: "tag-build" };
    expect(h.pool.take(sameLayersOtherBuild)?.record.sandboxId).toBe("sb1");
    await h.pool.close();
  });

  it("on refresh, discards the old build, cancels a launch of it and refills from the new one", async () => {
    const h = harness();
    await h.pool.waitFull();
    const release = h.holdLaunches();
    h.setCurrent(manifest(["layer-2", "layer-1"]));
    h.pool.refresh();
    expect(h.pool.readyCount).toBe(0);
    // The refill's first launch (of the new build) is held; a change to a third build cancels it.
    await new Promise((resolve) => setImmediate(resolve));
    const held = h.launchSignals.at(-1) as AbortSignal;
    h.setCurrent(manifest(["layer-3", "layer-1"]));
    h.pool.refresh();
    expect(held.aborted).toBe(true);
    release();
    await h.pool.waitFull();
    const layers = [...h.launchedFrom.entries()].filter(([id]) => !h.destroyed.includes(id)).map(([, l]) => l);
    expect(layers).toEqual([
      ["layer-3", "layer-1"],
      ["layer-3", "layer-1"],
    ]);
    await h.pool.close();
  });

  it("empties when its template is deleted, and refills when the name names a template again", async () => {
    const h = harness();
    await h.pool.waitFull();
    h.setCurrent(undefined);
    h.pool.refresh();
    expect(h.pool.readyCount).toBe(0);
    // Nothing to fill from: waitFull does not wait forever.
    await h.pool.waitFull();
    expect(h.pool.readyCount).toBe(0);
    h.setCurrent(manifest(["layer-5"], "tpl-new"));
    h.pool.refresh();
    await h.pool.waitFull();
    expect(h.pool.take(h.current() as TemplateManifest)).toBeDefined();
    await h.pool.close();
    // close() destroys what was still waiting.
    expect(h.destroyed).toContain("sb4");
  });
});

describe("warm pool refill deferral", () => {
  it("launches nothing until a deferral has passed after a take, then refills; without one it refills at once", async () => {
    let launches = 0;
    const pool = new WarmPool({
      template: "pooled",
      size: 1,
      resolve: () => manifest(["layer-1"]),
      launch: async () => ({ record: { sandboxId: `sb${++launches}` } }) as HostedSandbox,
      destroy: async () => undefined,
      logger: silentLogger,
    });
    await pool.waitFull();
    expect(launches).toBe(1);
    expect(pool.takeAny()?.record.sandboxId).toBe("sb1");
    pool.fill();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(launches).toBe(2);
    expect(pool.takeAny()?.record.sandboxId).toBe("sb2");
    pool.deferRefill(300);
    pool.fill();
    // Timers fire in the order they expire: this one, set after the pool's, still expires first.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(launches).toBe(2);
    expect(pool.status().starting).toBe(0);
    await pool.waitFull();
    expect(launches).toBe(3);
    await pool.close();
  });
});
