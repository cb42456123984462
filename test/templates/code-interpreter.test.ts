// The shipped code-interpreter template is built the first time a sandbox asks for it (by either of its names,
// `code-interpreter-v1` as the official SDK does, or `code-interpreter`): base plus Debian's python3-ipykernel,
// numpy, pandas and matplotlib, installed with apt-get inside a build sandbox (through NAT to the Debian mirror in
// this machine's apt sources). It takes minutes, so it is built once per run and kept for the other suites that
// use it (test/code-interpreter); the test server's state directory goes at the end of the run.
import { Sandbox, Template } from "e2b";
import { describe, expect, inject, it } from "vitest";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

describe("code-interpreter", () => {
  it("is built on first use under both names and has the data-science stack and the execution server", { timeout: 1_800_000 }, async () => {
    // The create waits for the build (if no suite of this run built it yet): no request timeout on the client side.
    const sandbox = await Sandbox.create("code-interpreter", { ...conn, requestTimeoutMs: 0 });
    try {
      expect(await Template.exists("code-interpreter", conn)).toBe(true);
      expect(await Template.exists("code-interpreter-v1", conn)).toBe(true);
      const probe = await sandbox.commands.run(
        "python3 -c 'import numpy, pandas, matplotlib, ipykernel; print(numpy.arange(6).reshape(2, 3).sum(axis=0).tolist())'",
      );
      expect(probe.stdout.trim()).toBe("[3, 5, 7]");
      expect((await sandbox.commands.run("whoami; pwd")).stdout).toBe("user\n/home/user\n");
      // 2 vCPU / 2 GB by default, as E2B's code-interpreter sandboxes.
      const info = await sandbox.getInfo();
      expect([info.cpuCount, info.memoryMB]).toEqual([2, 2048]);
      // The execution server is up by the time create returns (the template's ready check).
      expect((await sandbox.commands.run("curl -s http://127.0.0.1:49999/health")).stdout).toBe('"OK"');
    } finally {
      await sandbox.kill();
    }
    // Built once: a create by the other name reuses the template.
    const second = await Sandbox.create("code-interpreter-v1", conn);
    try {
      expect((await second.commands.run("python3 -c 'import pandas; print(pandas.DataFrame({\"a\": [1, 2]}).a.sum())'")).stdout.trim()).toBe("3");
    } finally {
      await second.kill();
    }
  });
});
