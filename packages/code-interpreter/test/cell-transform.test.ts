// The REPL-style rewrite of JavaScript cells, checked by running the rewritten cells one after another in one
// vm context, as a JavaScript context's worker does.
import { createContext, Script } from "node:vm";
import { describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol/errors";
import { transformCell } from "../src/kernels/node/cell-transform.js";

function session() {
  const context = createContext({ console });
  return async (cell: string): Promise<unknown> => new Script(transformCell(cell).code).runInContext(context) as Promise<unknown>;
}

describe("transformCell", () => {
  it("turns top-level declarations into globals that later cells see and may declare again", async () => {
    const run = session();
    expect(await run("const a = 1; let b = 2; var c = 3; function f() { return a + b + c } class K { v() { return 7 } }")).toBeUndefined();
    expect(await run("f() + new K().v()")).toBe(13);
    expect(await run("const a = 10; a + b")).toBe(12);
  });

  it("keeps destructuring, call-before-definition and top-level await", async () => {
    const run = session();
    expect(await run("const { x, y: [z = 5] = [] , ...rest } = { x: 1, y: [], p: 2 }; g(); function g() { return 1 }")).toBeUndefined();
    expect(await run("[x, z, rest.p]")).toEqual([1, 5, 2]);
    expect(await run("const v = await Promise.resolve(41); v + 1")).toBe(42);
  });

  it("rewrites imports as dynamic imports", () => {
    const { code, declared } = transformCell("import fs, { join as j, sep } from 'node:path'; import * as os from 'node:os'; import 'node:util';");
    expect(declared).toEqual(["fs", "j", "sep", "os"]);
    expect(code).toContain("await import('node:path')");
    expect(code).toContain("await import('node:util')");
  });

  it("gives no result when the cell does not end with an expression", async () => {
    const run = session();
    expect(await run("let q = 1; if (q) { q = 2 }")).toBeUndefined();
    expect(await run("q // trailing comment")).toBe(2);
  });

  it("throws InvalidArgument (cell_syntax) for code it cannot parse", () => {
    expect(() => transformCell("let = ;")).toThrow(expect.objectContaining({ code: Code.InvalidArgument, reason: "cell_syntax" }));
    expect(() => transformCell("export const a = 1")).toThrow(expect.objectContaining({ reason: "cell_syntax" }));
  });
});
