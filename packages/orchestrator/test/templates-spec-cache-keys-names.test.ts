// The pure parts of a template build: the SDK's build request parsed into steps, the cache keys of steps and the
// state they carry, template names and base image names, COPY globs, and the build log's pages and lines.
import { describe, expect, it } from "vitest";
import { BuildLog, LineSplitter } from "../src/templates/builder/build-log.js";
import { parseBuildSpec } from "../src/templates/builder/build-spec.js";
import { applyStateStep, baseKey, expandVars, stepKey, type BuildState } from "../src/templates/builder/build-state.js";
import { parseTemplateName } from "../src/templates/builder/template-names.js";
import { debianSuiteOf } from "../src/templates/bases/debian-suite.js";
import { imagePath } from "../src/templates/bases/resolve-base.js";
import { globToRegExp } from "../src/templates/builder/copy-step.js";

const hash = "a".repeat(64);

describe("parseBuildSpec", () => {
  it("accepts the SDK's TemplateBuildStartV2 and ignores client hints", () => {
    const spec = parseBuildSpec({
      fromImage: "debian:bookworm",
      startCmd: "python -m http.server",
      readyCmd: "sleep 1",
      force: false,
      steps: [
        { type: "RUN", args: ["echo hi", "root"], force: false },
        { type: "COPY", args: ["a.txt", "/app/", "", ""], force: false, filesHash: hash, forceUpload: true, gzip: true },
        { type: "ENV", args: ["A", "1"], force: true },
      ],
    });
    expect(spec.steps).toHaveLength(3);
    expect(spec.steps[1]).toEqual({ type: "COPY", args: ["a.txt", "/app/", "", ""], force: false, filesHash: hash });
    expect(spec.steps[2]?.force).toBe(true);
  });

  it("names the bad step", () => {
    expect(() => parseBuildSpec({ steps: [{ type: "RUN", args: ["x"] }, { type: "HEALTHCHECK", args: [] }] })).toThrow(/step 2/);
    expect(() => parseBuildSpec({ steps: [{ type: "COPY", args: ["a", "/b"] }] })).toThrow(/filesHash/);
    expect(() => parseBuildSpec({ fromImage: "a", fromTemplate: "b", steps: [] })).toThrow(/only one/);
  });
});

describe("cache keys", () => {
  const state: BuildState = { user: "user", env: {}, args: {} };
  const run = { type: "RUN" as const, args: ["echo hi"], force: false };

  it("are stable for the same parent, step and state", () => {
    const base = baseKey("template:abc", false);
    expect(baseKey("template:abc", false)).toBe(base);
    expect(stepKey(base, run, state)).toBe(stepKey(base, run, state));
  });

  it("change with the parent, the state, the files and force", () => {
    const base = baseKey("template:abc", false);
    const key = stepKey(base, run, state);
    expect(stepKey(baseKey("template:abd", false), run, state)).not.toBe(key);
    expect(stepKey(base, run, { ...state, user: "root" })).not.toBe(key);
    expect(stepKey(base, run, { ...state, env: { A: "1" } })).not.toBe(key);
    expect(stepKey(base, { ...run, force: true }, state)).not.toBe(key);
    expect(baseKey("template:abc", true)).not.toBe(base);
    const copy = { type: "COPY" as const, args: ["a", "/b"], force: false };
    expect(stepKey(base, { ...copy, filesHash: "1" }, state)).not.toBe(stepKey(base, { ...copy, filesHash: "2" }, state));
  });

  it("state steps update user, workdir, env and args", () => {
    let s = applyStateStep(state, { type: "WORKDIR", args: ["/app"], force: false });
    s = applyStateStep(s, { type: "WORKDIR", args: ["sub"], force: false });
    s = applyStateStep(s, { type: "ARG", args: ["V", "2"], force: false });
    s = applyStateStep(s, { type: "ENV", args: ["P", "/opt/$V"], force: false });
    s = applyStateStep(s, { type: "USER", args: ["root"], force: false });
    expect(s).toEqual({ user: "root", workdir: "/app/sub", env: { P: "/opt/2" }, args: { V: "2" } });
    expect(expandVars("${P}/x $V", s)).toBe("/opt/2/x 2");
  });
});

describe("names and bases", () => {
  it("parses names and tags", () => {
    expect(parseTemplateName("my-tpl:v1")).toEqual({ name: "my-tpl", tag: "v1" });
    expect(() => parseTemplateName("Bad Name")).toThrow(/invalid template name/);
  });

  it("maps Debian images and local image paths", () => {
    expect(debianSuiteOf("debian:bookworm")).toBe("bookworm");
    expect(debianSuiteOf("debian:stable-slim")).toBe("bookworm");
    expect(debianSuiteOf("debian:13")).toBe("trixie");
    expect(debianSuiteOf("docker.io/library/debian:sid")).toBe("sid");
    expect(debianSuiteOf("ubuntu:22.04")).toBeUndefined();
    expect(imagePath("oci:/tmp/img:latest")).toBe("/tmp/img");
    expect(imagePath("/tmp/img.tar")).toBe("/tmp/img.tar");
    expect(imagePath("python:3")).toBeUndefined();
  });

  it("matches globs like the SDK's", () => {
    expect(globToRegExp("src/*.ts").test("src/a.ts")).toBe(true);
    expect(globToRegExp("src/*.ts").test("src/x/a.ts")).toBe(false);
    expect(globToRegExp("**/*.py").test("a/b/c.py")).toBe(true);
  });
});

describe("build log", () => {
  it("pages by offset at most 100 entries", () => {
    const log = new BuildLog();
    for (let i = 0; i < 250; i++) log.add("info", `line ${i}`, "1");
    expect(log.page(0)).toHaveLength(100);
    expect(log.page(200)).toHaveLength(50);
    expect(log.page(250)).toHaveLength(0);
    expect(log.page(120)[0]?.message).toBe("line 120");
  });

  it("splits output into lines across chunks", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    splitter.push(Buffer.from("a\nb"));
    splitter.push(Buffer.from("c\r\nd"));
    splitter.flush();
    expect(lines).toEqual(["a", "bc", "d"]);
  });
});
