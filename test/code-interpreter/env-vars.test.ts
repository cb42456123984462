// Environment variables: the sandbox's (given at create) in every language, and per-run ones that arrive with any
// characters intact and are gone again after the run.
import { describe, expect, it } from "vitest";
import { useInterpreter } from "./helpers.js";

const TRICKY = `it's "quoted" $HOME \`tick\` back\\slash\nsecond line ü €`;

const shared = useInterpreter({ envs: { FROM_CREATE: "created", TRICKY_CREATE: TRICKY } });

describe("environment variables", () => {
  it("the sandbox's variables reach python, javascript and bash", async () => {
    expect((await shared.sandbox.runCode("import os; print(os.environ['FROM_CREATE'], end='')")).logs.stdout.join("")).toBe("created");
    expect((await shared.sandbox.runCode("import os; print(os.environ['TRICKY_CREATE'], end='')")).logs.stdout.join("")).toBe(TRICKY);
    expect((await shared.sandbox.runCode("process.stdout.write(process.env.FROM_CREATE)", { language: "javascript" })).logs.stdout.join("")).toBe("created");
    expect((await shared.sandbox.runCode('printf %s "$FROM_CREATE"', { language: "bash" })).logs.stdout.join("")).toBe("created");
  });

  for (const [language, print, unsetCheck] of [
    ["python", "import os; print(os.environ['PER_RUN'], end='')", "import os; print(os.environ.get('PER_RUN', '<unset>'), end='')"],
    ["javascript", "process.stdout.write(process.env.PER_RUN)", "process.stdout.write(process.env.PER_RUN ?? '<unset>')"],
    ["bash", 'printf %s "$PER_RUN"', 'printf %s "${PER_RUN-<unset>}"'],
  ] as const) {
    it(`per-run variables in ${language} are intact and restored afterwards`, async () => {
      const run = await shared.sandbox.runCode(print, { language, envs: { PER_RUN: TRICKY } });
      expect(run.error).toBeUndefined();
      expect(run.logs.stdout.join("")).toBe(TRICKY);
      expect((await shared.sandbox.runCode(unsetCheck, { language })).logs.stdout.join("")).toBe("<unset>");
    });
  }

  it("a per-run value overrides a shared.sandbox variable for that run only", async () => {
    const code = "import os; print(os.environ['FROM_CREATE'], end='')";
    expect((await shared.sandbox.runCode(code, { envs: { FROM_CREATE: "override" } })).logs.stdout.join("")).toBe("override");
    expect((await shared.sandbox.runCode(code)).logs.stdout.join("")).toBe("created");
  });
});
