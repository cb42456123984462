// Contexts through the official SDK: create, list, restart (same id, state gone), remove.
import { InvalidArgumentError, NotFoundError } from "@e2b/code-interpreter";
import { describe, expect, it } from "vitest";
import { useInterpreter, interpreterHeaders } from "./helpers.js";

const shared = useInterpreter();

describe("contexts", () => {
  it("has python and javascript contexts from the start", async () => {
    const languages = (await shared.sandbox.listCodeContexts()).map((c) => c.language);
    expect(languages).toEqual(expect.arrayContaining(["python", "javascript"]));
  });

  it("creates, lists, restarts and removes a context", async () => {
    const context = await shared.sandbox.createCodeContext({ cwd: "/tmp" });
    expect(context).toMatchObject({ language: "python", cwd: "/tmp" });
    expect((await shared.sandbox.listCodeContexts()).map((c) => c.id)).toContain(context.id);
    expect((await shared.sandbox.runCode("import os; os.getcwd()", { context })).text).toBe("/tmp");
    await shared.sandbox.runCode("x = 42", { context });
    expect((await shared.sandbox.runCode("x", { context })).text).toBe("42");
    // The default context does not share the new one's state.
    expect((await shared.sandbox.runCode("'x' in globals()")).text).toBe("False");

    await shared.sandbox.restartCodeContext(context);
    const after = await shared.sandbox.runCode("x", { context });
    expect(after.error?.name).toBe("NameError");
    expect(after.error?.value).toBe("name 'x' is not defined");
    expect((await shared.sandbox.runCode("import os; os.getcwd()", { context })).text).toBe("/tmp");
    expect((await shared.sandbox.listCodeContexts()).filter((c) => c.id === context.id)).toHaveLength(1);

    await shared.sandbox.removeCodeContext(context.id);
    expect((await shared.sandbox.listCodeContexts()).map((c) => c.id)).not.toContain(context.id);
    await expect(shared.sandbox.runCode("1", { context })).rejects.toBeInstanceOf(NotFoundError);
    await expect(shared.sandbox.restartCodeContext(context)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("creates contexts of other languages", async () => {
    const js = await shared.sandbox.createCodeContext({ language: "js" });
    expect(js.language).toBe("javascript");
    expect((await shared.sandbox.runCode("process.cwd()", { context: js })).text).toBe("/home/user");
    await shared.sandbox.removeCodeContext(js);
  });

  it("refuses a context together with a language, and unknown languages", async () => {
    const [context] = await shared.sandbox.listCodeContexts();
    await expect(shared.sandbox.runCode("1", { context: context!, language: "python" } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    const res = await fetch(`${shared.env.sandboxUrl}/execute`, {
      method: "POST",
      headers: interpreterHeaders(shared.sandbox),
      body: JSON.stringify({ code: "1", context_id: context!.id, language: "python" }),
    });
    expect(res.status).toBe(400);
    await expect(shared.sandbox.createCodeContext({ language: "cobol" })).rejects.toThrow(/400/);
  });
});
