// What a code run keeps of a result for its event and its task: formats too large are left out (largest first) and
// named, the text is cut only when it alone is too large; and the languages code runs accept.
import { describe, expect, it } from "vitest";
import { boundedResult } from "../src/bus/code-runner.js";
import { normalizeCodeLanguage } from "../src/bus/execution-client.js";

describe("boundedResult", () => {
  it("keeps a result that fits as it is, without its line type", () => {
    const line = { type: "result", text: "2", is_main_result: true };
    expect(boundedResult(line, 1024)).toEqual({ result: { text: "2", is_main_result: true }, omitted: [] });
  });

  it("leaves out the largest formats first until the result fits", () => {
    const line = { type: "result", text: "<Figure>", png: "p".repeat(5000), svg: "s".repeat(3000), chart: { type: "bar" }, is_main_result: false };
    const { result, omitted } = boundedResult(line, 4000);
    expect(omitted).toEqual(["png"]);
    expect(result).toEqual({ text: "<Figure>", svg: "s".repeat(3000), chart: { type: "bar" }, is_main_result: false });
    expect(boundedResult(line, 500)).toEqual({ result: { text: "<Figure>", chart: { type: "bar" }, is_main_result: false }, omitted: ["png", "svg"] });
  });

  it("cuts a text that alone is too large, with a marker", () => {
    const { result, omitted } = boundedResult({ type: "result", text: "x".repeat(10_000), is_main_result: true }, 4096);
    expect(omitted).toEqual([]);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(4096);
    expect(result.text).toMatch(/^x+\n\[burrow: result text cut to fit the event\]$/);
  });
});

describe("normalizeCodeLanguage", () => {
  it("maps the names clients use to the execution server's, and knows no others", () => {
    expect(["Python", "py", "python3", "js", "node", "ts", "sh", "r"].map(normalizeCodeLanguage)).toEqual([
      "python", "python", "python", "javascript", "javascript", "typescript", "bash", "r",
    ]);
    expect(normalizeCodeLanguage("cobol")).toBeUndefined();
    expect(normalizeCodeLanguage("constructor")).toBeUndefined();
  });
});
