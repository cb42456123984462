// JavaScript, TypeScript and bash contexts through the official SDK.
import { describe, expect, it } from "vitest";
import { useInterpreter } from "./helpers.js";

const shared = useInterpreter();

describe("javascript", () => {
  it("keeps state, prints with console.log, awaits at top level and returns the last expression", async () => {
    await shared.sandbox.runCode("const greeting = 'hi'; let n = 1; function twice(v) { return v * 2 }", { language: "javascript" });
    const execution = await shared.sandbox.runCode(
      "console.log(greeting); n = twice(n) + await Promise.resolve(1); n",
      { language: "js" },
    );
    expect(execution.logs.stdout).toEqual(["hi\n"]);
    expect(execution.text).toBe("3");
    // Running a cell that declares a const again is fine (REPL semantics).
    expect((await shared.sandbox.runCode("const greeting = 'hello'; greeting", { language: "javascript" })).text).toBe("hello");
  });

  it("reports thrown errors and imports modules", async () => {
    const failed = await shared.sandbox.runCode("throw new TypeError('bad value')", { language: "javascript" });
    expect(failed.error?.name).toBe("TypeError");
    expect(failed.error?.value).toBe("bad value");
    const imported = await shared.sandbox.runCode("import { basename } from 'node:path'; basename('/a/b.txt')", { language: "javascript" });
    expect(imported.text).toBe("b.txt");
    expect((await shared.sandbox.runCode("typeof basename", { language: "javascript" })).text).toBe("function");
  });
});

describe("typescript", () => {
  it("strips types and keeps state", async () => {
    await shared.sandbox.runCode("interface Point { x: number; y: number }\nconst p: Point = { x: 3, y: 4 };", { language: "typescript" });
    const execution = await shared.sandbox.runCode("const len = (q: Point): number => Math.hypot(q.x, q.y);\nlen(p)", { language: "ts" });
    expect(execution.error).toBeUndefined();
    expect(execution.text).toBe("5");
  });

  it("reports a compile error", async () => {
    const execution = await shared.sandbox.runCode("const x: number = ;", { language: "typescript" });
    expect(execution.error?.name).toBe("TypeScriptCompilerError");
  });
});

describe("bash", () => {
  it("keeps the working directory and variables, and reports a failing command", async () => {
    await shared.sandbox.runCode("cd /tmp && GREETING=hello", { language: "bash" });
    const execution = await shared.sandbox.runCode("echo $GREETING; pwd", { language: "bash" });
    expect(execution.logs.stdout.join("")).toBe("hello\n/tmp\n");
    const failing = await shared.sandbox.runCode("ls /does-not-exist", { language: "bash" });
    expect(failing.logs.stderr.join("")).toContain("No such file or directory");
    expect(failing.error?.value).toBe("exit status 2");
  });
});
