// Placement of creates (cluster/placement.ts): which nodes may take a sandbox, in which order they are tried, and
// that the random draw spreads a burst over the nodes instead of piling it on one.
import { describe, expect, it } from "vitest";
import { placeCreate, type PlacementNode } from "../src/cluster/placement.js";

const GiB = 1024 ** 3;

function node(name: string, over: Partial<PlacementNode> = {}): PlacementNode {
  return { name, up: true, cordoned: false, templates: new Set(["base", "tpl-base"]), sandboxes: 0, capacity: 2000, freeMemoryBytes: 16 * GiB, warm: 0, ...over };
}

/** A fixed sequence of draws (each in [0, 1)), repeated. */
function draws(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe("placeCreate", () => {
  it("skips down, cordoned, full nodes and those without the template or not saying which they have", () => {
    const plan = placeCreate(
      [
        node("a"),
        node("down", { up: false }),
        node("cordoned", { cordoned: true }),
        node("other-templates", { templates: new Set(["python"]) }),
        node("old-version", { templates: undefined }),
        node("at-limit", { sandboxes: 10, capacity: 10 }),
        node("no-memory", { freeMemoryBytes: 300 * 1024 ** 2 }),
      ],
      { template: ["base"], self: "a", random: draws(0) },
    );
    expect(plan.order).toEqual(["a"]);
    expect(plan.skipped).toEqual([
      { node: "down", why: "down" },
      { node: "cordoned", why: "cordoned" },
      { node: "other-templates", why: "no_template" },
      { node: "old-version", why: "templates_unknown" },
      { node: "at-limit", why: "full" },
      { node: "no-memory", why: "full" },
    ]);
  });

  it("matches the template by any of its names", () => {
    const plan = placeCreate([node("a", { templates: new Set(["x"]) }), node("b", { templates: new Set(["tpl-base"]) })], { template: ["base", "tpl-base"], self: "a" });
    expect(plan.order).toEqual(["b"]);
  });

  it("a template in the cluster's bucket may go to a node without it, after the nodes that have it unless they are much fuller", () => {
    const nodes = [node("self", { templates: new Set(["base"]), freeMemoryBytes: 1024 * GiB }), node("has", { templates: new Set(["tpl"]), sandboxes: 500, freeMemoryBytes: 1024 * GiB }), node("cordoned", { cordoned: true })];
    const fetchable = { template: ["tpl"], self: "self", fetchable: true, random: draws(0) };
    expect(placeCreate(nodes, fetchable).order).toEqual(["has", "self"]);
    // 1,500 of 2,000 taken outweighs a fetch.
    expect(placeCreate([nodes[0]!, node("has", { templates: new Set(["tpl"]), sandboxes: 1500, freeMemoryBytes: 1024 * GiB })], fetchable).order).toEqual(["self", "has"]);
    // Not in the bucket: only the node that has it.
    expect(placeCreate(nodes, { ...fetchable, fetchable: false }).order).toEqual(["has"]);
  });

  it("orders the drawn nodes by load, then the rest, and this node last when it was not drawn", () => {
    const nodes = [node("self", { sandboxes: 0 }), node("b", { sandboxes: 5 }), node("c", { sandboxes: 1 }), node("d", { sandboxes: 3 }), node("e", { sandboxes: 2 })];
    // Draws (a partial shuffle): position 1 of 5 (b), then position 1 + 3 of the rest (e), with 2 choices.
    const plan = placeCreate(nodes, { template: ["base"], self: "self", choices: 2, random: draws(0.3, 0.8) });
    expect(plan.order.slice(0, 2)).toEqual(["e", "b"]);
    expect(plan.order.slice(2)).toEqual(["c", "d", "self"]);
  });

  it("a node with a warm sandbox of the template wins over emptier cold ones", () => {
    const plan = placeCreate([node("self"), node("warm", { sandboxes: 40, warm: 1 }), node("c")], { template: ["base"], self: "self", random: draws(0) });
    expect(plan.order[0]).toBe("warm");
  });

  it("between equally loaded nodes this one goes first (no hop)", () => {
    for (const r of [0, 0.5, 0.99]) {
      expect(placeCreate([node("b"), node("self"), node("c")], { template: ["base"], self: "self", random: draws(r) }).order[0]).toBe("self");
    }
  });

  it("less free memory means less room: memory decides when it is short", () => {
    const plan = placeCreate([node("a", { sandboxes: 10, freeMemoryBytes: 2 * GiB }), node("b", { sandboxes: 12, freeMemoryBytes: 32 * GiB })], { template: ["base"], self: "x" });
    expect(plan.order).toEqual(["b", "a"]);
  });

  it("placing a burst with the counts it causes spreads it over all nodes", () => {
    const nodes = ["a", "b", "c", "d", "e"].map((name) => node(name));
    const got = new Map<string, number>();
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    for (let i = 0; i < 100; i++) {
      const chosen = placeCreate(nodes, { template: ["base"], self: "a", random }).order[0]!;
      got.set(chosen, (got.get(chosen) ?? 0) + 1);
      nodes.find((n) => n.name === chosen)!.sandboxes++;
    }
    for (const name of ["a", "b", "c", "d", "e"]) expect(got.get(name) ?? 0).toBeGreaterThanOrEqual(15);
  });

  it("nothing can take it: an empty order and every node's reason", () => {
    const plan = placeCreate([node("a", { cordoned: true }), node("b", { up: false })], { template: ["base"], self: "a" });
    expect(plan).toEqual({ order: [], skipped: [{ node: "a", why: "cordoned" }, { node: "b", why: "down" }] });
  });
});
