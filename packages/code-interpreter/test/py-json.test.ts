// The stream's JSON is byte-for-byte what Python's json.dumps writes (compared against the real thing).
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { pyJson } from "../src/http/py-json.js";

describe("pyJson", () => {
  it("matches json.dumps for strings with quotes, control and non-ASCII characters, numbers, nesting", () => {
    const value = { type: "stdout", text: `a "q" \\ \n\t\u0001 é € 😀 \u007f`, n: [1, 2.5, -3, null, true, false], o: { k: {} }, e: [] };
    const python = execFileSync("/usr/bin/python3", ["-c", "import json, sys; sys.stdout.write(json.dumps(json.loads(sys.stdin.read())))"], {
      input: JSON.stringify(value),
    }).toString();
    expect(pyJson(value)).toBe(python);
  });
});
