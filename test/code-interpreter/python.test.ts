// Python contexts through the official @e2b/code-interpreter SDK: state, streamed output, errors, rich results.
import type { OutputMessage, Result } from "@e2b/code-interpreter";
import { describe, expect, it } from "vitest";
import { useInterpreter } from "./helpers.js";

const shared = useInterpreter();

describe("python", () => {
  it("keeps state between runs and returns the last expression", async () => {
    await shared.sandbox.runCode("x = 1");
    const execution = await shared.sandbox.runCode("x += 1; x");
    expect(execution.text).toBe("2");
    expect(execution.results[0]?.isMainResult).toBe(true);
    expect(execution.error).toBeUndefined();
    expect(execution.executionCount).toBeGreaterThan(1);
  });

  it("streams stdout and stderr to the callbacks in order", async () => {
    const seen: string[] = [];
    const execution = await shared.sandbox.runCode(
      "import sys, time\nprint('one', flush=True)\ntime.sleep(0.3)\nprint('two', file=sys.stderr, flush=True)\ntime.sleep(0.3)\nprint('three', flush=True)",
      {
        onStdout: (m: OutputMessage) => void seen.push(`out:${m.line.trim()}`),
        onStderr: (m: OutputMessage) => void seen.push(`err:${m.line.trim()}`),
      },
    );
    expect(seen).toEqual(["out:one", "err:two", "out:three"]);
    expect(execution.logs.stdout.join("")).toBe("one\nthree\n");
    expect(execution.logs.stderr.join("")).toBe("two\n");
  });

  it("reports an error with its traceback", async () => {
    const errors: string[] = [];
    const execution = await shared.sandbox.runCode("def f():\n    return 1 / 0\nf()", { onError: (e) => void errors.push(e.name) });
    expect(execution.error?.name).toBe("ZeroDivisionError");
    expect(execution.error?.value).toBe("division by zero");
    expect(execution.error?.traceback).toContain("return 1 / 0");
    expect(execution.error?.traceback).not.toMatch(/\x1b\[/);
    expect(errors).toEqual(["ZeroDivisionError"]);
    // The context is fine afterwards.
    expect((await shared.sandbox.runCode("x")).text).toBe("2");
  });

  it("runs code sent right after a failing run (the kernel aborts nothing)", async () => {
    // The second run is queued behind the first, so it reaches the kernel the moment the error is reported:
    // ipykernel's stop_on_error would abort it without running it and the client would get nothing at all.
    for (let i = 0; i < 5; i++) {
      const [failed, next] = await Promise.all([shared.sandbox.runCode("1 / 0"), shared.sandbox.runCode(`${i} + 1`)]);
      expect(failed.error?.name).toBe("ZeroDivisionError");
      expect(next.error).toBeUndefined();
      expect(next.text).toBe(String(i + 1));
    }
  });

  it("returns a displayed DataFrame as html, text and data", async () => {
    const results: Result[] = [];
    const execution = await shared.sandbox.runCode(
      "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', None]})\ndisplay(df)\nlen(df)",
      { onResult: (r) => void results.push(r) },
    );
    expect(results).toHaveLength(2);
    const [table, main] = execution.results;
    expect(table?.isMainResult).toBe(false);
    expect(table?.html).toContain("<table");
    expect(table?.data).toEqual({ a: [1, 2, 3], b: ["x", "y", null] });
    expect(table?.formats()).toEqual(expect.arrayContaining(["html", "data"]));
    expect(main?.text).toBe("3");
  });

  it("returns lists and dicts as json, strings without their quotes, and markdown/html/svg displays", async () => {
    expect((await shared.sandbox.runCode("'hello'")).text).toBe("hello");
    const json = await shared.sandbox.runCode("{'k': [1, 2.5, None]}");
    expect(json.results[0]?.json).toEqual({ k: [1, 2.5, null] });
    const rich = await shared.sandbox.runCode(
      "from IPython.display import display, Markdown, HTML, SVG, Latex\n" +
        "display(Markdown('# Title'))\ndisplay(HTML('<b>b</b>'))\n" +
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"><circle r=\"1\"/></svg>'))\ndisplay(Latex('$x^2$'))",
    );
    expect(rich.results.map((r) => r.formats()[0])).toEqual(["markdown", "html", "svg", "latex"]);
    expect(rich.results[0]?.markdown).toBe("# Title");
  });
});
