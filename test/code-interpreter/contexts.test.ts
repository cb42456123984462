// Contexts through the official SDK: create, list, restart (same id, state gone), remove.
import { InvalidArgumentError, NotFoundError, Sandbox } from "@e2b/code-interpreter";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createInterpreter, interpreterHeaders } from "./helpers.js";

const env = inject("burrow");
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await createInterpreter(env);
}, 1_800_000);

afterAll(async () => {
  await sandbox?.kill();
});

describe("contexts", () => {
  it("has python and javascript contexts from the start", async () => {
    const languages = (await sandbox.listCodeContexts()).map((c) => c.language);
    expect(languages).toEqual(expect.arrayContaining(["python", "javascript"]));
  });

  it("creates, lists, restarts and removes a context", async () => {
    const context = await sandbox.createCodeContext({ cwd: "/tmp" });
    expect(context).toMatchObject({ language: "python", cwd: "/tmp" });
    expect((await sandbox.listCodeContexts()).map((c) => c.id)).toContain(context.id);
    expect((await sandbox.runCode("import os; os.getcwd()", { context })).text).toBe("/tmp");
    await sandbox.runCode("x = 42", { context });
    expect((await sandbox.runCode("x", { context })).text).toBe("42");
    // The default context does not share the new one's state.
    expect((await sandbox.runCode("'x' in globals()")).text).toBe("False");

    await sandbox.restartCodeContext(context);
    const after = await sandbox.runCode("x", { context });
    expect(after.error?.name).toBe("NameError");
    expect(after.error?.value).toBe("name 'x' is not defined");
    expect((await sandbox.runCode("import os; os.getcwd()", { context })).text).toBe("/tmp");
    expect((await sandbox.listCodeContexts()).filter((c) => c.id === context.id)).toHaveLength(1);

    await sandbox.removeCodeContext(context.id);
    expect((await sandbox.listCodeContexts()).map((c) => c.id)).not.toContain(context.id);
    await expect(sandbox.runCode("1", { context })).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.restartCodeContext(context)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("creates contexts of other languages", async () => {
    const js = await sandbox.createCodeContext({ language: "js" });
    expect(js.language).toBe("javascript");
    expect((await sandbox.runCode("process.cwd()", { context: js })).text).toBe("/home/user");
    await sandbox.removeCodeContext(js);
  });

  it("refuses a context together with a language, and unknown languages", async () => {
    const [context] = await sandbox.listCodeContexts();
    await expect(sandbox.runCode("1", { context: context!, language: "python" } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    const res = await fetch(`${env.sandboxUrl}/execute`, {
      method: "POST",
      headers: interpreterHeaders(sandbox),
      body: JSON.stringify({ code: "1", context_id: context!.id, language: "python" }),
    });
    expect(res.status).toBe(400);
    await expect(sandbox.createCodeContext({ language: "cobol" })).rejects.toThrow(/400/);
  });
});
