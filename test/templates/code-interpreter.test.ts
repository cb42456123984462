// The shipped `code-interpreter` template is built the first time a sandbox asks for it: base plus Debian's
// python3-ipykernel, numpy, pandas and matplotlib, installed with apt-get inside a build sandbox (through NAT to
// the Debian mirror in this machine's apt sources). It takes minutes, so this is the only test that builds it.
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

afterAll(async () => {
  await deleteTemplate(env, "code-interpreter");
});

describe("code-interpreter", () => {
  it("is built on first use and has the data-science stack", { timeout: 1_800_000 }, async () => {
    expect(await Template.exists("code-interpreter", conn)).toBe(false);
    // The create waits for the build: no request timeout on the client side.
    const sandbox = await Sandbox.create("code-interpreter", { ...conn, requestTimeoutMs: 0 });
    try {
      expect(await Template.exists("code-interpreter", conn)).toBe(true);
      const probe = await sandbox.commands.run(
        "python3 -c 'import numpy, pandas, matplotlib, ipykernel; print(numpy.arange(6).reshape(2, 3).sum(axis=0).tolist())'",
      );
      expect(probe.stdout.trim()).toBe("[3, 5, 7]");
      expect((await sandbox.commands.run("whoami; pwd")).stdout).toBe("user\n/home/user\n");
    } finally {
      await sandbox.kill();
    }
    // Built once: a second create reuses the template.
    const second = await Sandbox.create("code-interpreter", conn);
    try {
      expect((await second.commands.run("python3 -c 'import pandas; print(pandas.DataFrame({\"a\": [1, 2]}).a.sum())'")).stdout.trim()).toBe("3");
    } finally {
      await second.kill();
    }
  });
});
