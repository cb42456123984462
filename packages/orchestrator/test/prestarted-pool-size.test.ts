// How many prestarted sandboxes a shipped template's pool keeps: its configured size under its name or any alias of
// the same template, else the default (1 while the warm pool is on).
import { describe, expect, it } from "vitest";
import { prestartedPoolSize } from "../src/prestarted-pools.js";

const ids: Record<string, string> = { "code-interpreter-v1": "ci1", "code-interpreter": "ci1", desktop: "dt1" };
const idOf = (ref: string) => ids[ref];

describe("prestarted pool size", () => {
  it("takes the size named for the template, else the default", () => {
    expect(prestartedPoolSize("code-interpreter-v1", { size: 1, sizes: { "code-interpreter-v1": 3 } }, idOf)).toBe(3);
    expect(prestartedPoolSize("desktop", { size: 1, sizes: { "code-interpreter-v1": 3 } }, idOf)).toBe(1);
    expect(prestartedPoolSize("desktop", { size: 0 }, idOf)).toBe(0);
  });

  it("finds a size given under an alias of the same template", () => {
    expect(prestartedPoolSize("code-interpreter-v1", { size: 1, sizes: { "code-interpreter": 0 } }, idOf)).toBe(0);
    expect(prestartedPoolSize("code-interpreter-v1", { size: 0, sizes: { "code-interpreter": 2, desktop: 5 } }, idOf)).toBe(2);
  });

  it("turns a pool on by its size while the warm pool is off, and ignores names of no template", () => {
    expect(prestartedPoolSize("desktop", { size: 0, sizes: { desktop: 1 } }, idOf)).toBe(1);
    expect(prestartedPoolSize("desktop", { size: 1, sizes: { nothing: 4 } }, idOf)).toBe(1);
    expect(prestartedPoolSize("constructor", { size: 1, sizes: {} }, idOf)).toBe(1);
  });
});
