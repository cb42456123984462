// Placement by CPU (cluster/placement.ts nodeLoadScore, cluster/cpu-use.ts): a node whose CPUs were busy over the last
// heartbeat, or whose sandboxes hold more vCPUs per CPU it has, is placed on after an idler one with the same counts;
// the score stays in [0, 1] as before, so a template fetch's penalty (0.5) keeps its weight;
// records without CPU figures (older nodes) are placed by counts as before. The busy share comes from /proc/stat deltas.
import { describe, expect, it } from "vitest";
import { CpuUse, parseProcStat } from "../src/cluster/cpu-use.js";
import { cpuSince, nodeLoadScore, placeCreate, VCPU_PER_CPU, type PlacementNode } from "../src/cluster/placement.js";

const GiB = 1024 ** 3;

function node(name: string, over: Partial<PlacementNode> = {}): PlacementNode {
  return { name, up: true, cordoned: false, templates: new Set(["base"]), sandboxes: 10, capacity: 100, freeMemoryBytes: 64 * GiB, warm: 0, ...over };
}

/** Every node drawn (k = all), so the order is the score's alone. */
const plan = (nodes: PlacementNode[], self = "elsewhere") => placeCreate(nodes, { template: ["base"], self, choices: nodes.length, random: () => 0 }).order;

describe("nodeLoadScore", () => {
  it("is the share of room in use without CPU figures, and the mean of it, busy share and vCPUs per CPU with them", () => {
    expect(nodeLoadScore({ sandboxes: 10 }, 30)).toBe(0.25);
    const committed = 16 / (8 * VCPU_PER_CPU);
    expect(nodeLoadScore({ sandboxes: 10, cpu: { cpus: 8, busy: 0.5, committedVcpu: 16 } }, 30)).toBeCloseTo((0.25 + 0.5 + committed / (1 + committed)) / 3);
    // Bounded like the share alone, so that a template fetch's penalty keeps its weight however loaded a node is.
    expect(nodeLoadScore({ sandboxes: 10, cpu: { cpus: 1, busy: 1, committedVcpu: 1000 } }, 0)).toBeLessThan(1);
  });
});

describe("placement by CPU", () => {
  it("places on the node whose CPUs were less busy when the counts are equal", () => {
    const nodes = [node("busy", { cpu: { cpus: 4, busy: 0.9, committedVcpu: 8 } }), node("idle", { cpu: { cpus: 4, busy: 0.1, committedVcpu: 8 } })];
    expect(plan(nodes)).toEqual(["idle", "busy"]);
  });

  it("weighs committed vCPUs against the host's CPUs: the bigger host takes the next sandbox", () => {
    const nodes = [node("small", { cpu: { cpus: 2, busy: 0.2, committedVcpu: 16 } }), node("large", { cpu: { cpus: 32, busy: 0.2, committedVcpu: 16 } })];
    expect(plan(nodes)).toEqual(["large", "small"]);
  });

  it("on one host (same busy share) the node with fewer vCPUs committed goes first, so a burst still spreads", () => {
    const nodes = [node("a", { sandboxes: 5, cpu: { cpus: 2, busy: 0.7, committedVcpu: 10 } }), node("b", { sandboxes: 4, cpu: { cpus: 2, busy: 0.7, committedVcpu: 8 } })];
    expect(plan(nodes)).toEqual(["b", "a"]);
  });

  it("a node fuller by count but with idle CPUs goes before an emptier one whose CPUs are saturated", () => {
    // Counts: 90 of 100 vs 10 of 100; CPU: the emptier node is saturated. (0.9 + 0 + 0) / 3 vs (0.1 + 1 + 1/2) / 3.
    const nodes = [node("full", { sandboxes: 90, cpu: { cpus: 8, busy: 0, committedVcpu: 0 } }), node("hot", { cpu: { cpus: 8, busy: 1, committedVcpu: 32 } })];
    expect(plan(nodes)).toEqual(["full", "hot"]);
  });

  it("a busy node that has the template goes before an idle one that would fetch it while its load is under the penalty", () => {
    // (0.1 + 0.6 + 1/2) / 3 = 0.4 against 0 + 0.5; an unbounded sum (0.1 + 0.6 + 1) would send it to be fetched.
    const nodes = [node("has-it", { cpu: { cpus: 2, busy: 0.6, committedVcpu: 8 } }), node("would-fetch", { templates: new Set(["other"]), sandboxes: 0, cpu: { cpus: 64, busy: 0, committedVcpu: 0 } })];
    expect(placeCreate(nodes, { template: ["base"], self: "x", choices: 2, random: () => 0, fetchable: true }).order).toEqual(["has-it", "would-fetch"]);
  });

  it("records without CPU figures are placed by counts as before", () => {
    expect(plan([node("more", { sandboxes: 20 }), node("fewer", { sandboxes: 5 })])).toEqual(["fewer", "more"]);
  });
});

describe("CpuUse", () => {
  it("reads the aggregate line (idle and iowait are not busy)", () => {
    expect(parseProcStat("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5\n")).toEqual({ busy: 150, total: 1000 });
    expect(parseProcStat("intr 1 2 3\n")).toBeUndefined();
  });

  it("gives the busy share since the previous sample, nothing on the first", async () => {
    const lines = ["cpu  100 0 100 700 100 0 0 0", "cpu  400 0 200 1000 100 0 0 0", "cpu  400 0 200 1000 100 0 0 0"];
    let i = 0;
    const use = new CpuUse(async () => `${lines[i++]}\n`);
    expect(await use.sample()).toBeUndefined();
    // +300 user +100 system +300 idle: 400 of 700 busy.
    expect(await use.sample()).toBeCloseTo(400 / 700);
    // No time passed: nothing to say.
    expect(await use.sample()).toBeUndefined();
  });

  it("says nothing when /proc/stat cannot be read", async () => {
    const use = new CpuUse(async () => {
      throw new Error("ENOENT");
    });
    expect(await use.sample()).toBeUndefined();
  });

  it("measures this host", async () => {
    const use = new CpuUse();
    await use.sample();
    const until = Date.now() + 50;
    while (Date.now() < until); // keep one CPU busy for a moment
    const busy = await use.sample();
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(1);
  });
});

describe("CPU figures since a node's record", () => {
  it("count the sandboxes gained since at the record's average vCPUs (2 without one), and are the record's when nothing changed", () => {
    const recorded = { cpus: 2, busy: 0.4, committedVcpu: 12 };
    expect(cpuSince(recorded, 4, 4)).toBe(recorded);
    expect(cpuSince(recorded, 4, 6)).toEqual({ cpus: 2, busy: 0.4, committedVcpu: 18 });
    expect(cpuSince(recorded, 4, 2)).toEqual({ cpus: 2, busy: 0.4, committedVcpu: 6 });
    expect(cpuSince({ cpus: 2, committedVcpu: 0 }, 0, 3)).toEqual({ cpus: 2, committedVcpu: 6 });
    expect(cpuSince(undefined, 0, 3)).toBeUndefined();
  });

  it("spread a burst over nodes on one host whose records were written in windows of different busy shares", () => {
    // Three nodes on one 2-CPU host, each record written at a different moment of a burst: busy shares differ by
    // chance. 30 creates placed one after another, each node's figures moved on by what was placed on it since.
    const records = { a: 0.6, b: 0.45, c: 0.3 };
    const placed: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 30; i++) {
      const nodes = Object.entries(records).map(([name, busy]) =>
        node(name, { sandboxes: placed[name]!, cpu: cpuSince({ cpus: 2, busy, committedVcpu: 0 }, 0, placed[name]!) }),
      );
      placed[plan(nodes)[0]!]! += 1;
    }
    // Without cpuSince the idlest record takes all 30; with it the idler records take more, every node some
    // (6 / 9 / 15).
    expect(placed.c).toBeLessThanOrEqual(16);
    expect(placed.a).toBeGreaterThanOrEqual(4);
    expect(placed.a).toBeLessThan(placed.b!);
    expect(placed.b).toBeLessThan(placed.c!);
  });
});
