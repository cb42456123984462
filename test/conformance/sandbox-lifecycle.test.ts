// Control-plane behaviour through the official SDK against a real server (SDK tests api/*, sandbox/create,
// kill, connect, timeout, metrics).
import { describe, expect } from "vitest";
import { Sandbox, SandboxNotFoundError } from "e2b";
import { Sandbox as LegacySandbox } from "e2b-legacy";
import { sandboxTest, sdkOpts, TEMPLATE } from "./env.js";

describe("sandbox lifecycle", () => {
  sandboxTest("create returns a running sandbox with its info", async ({ sandbox }) => {
    expect(await sandbox.isRunning()).toBe(true);
    const info = await sandbox.getInfo();
    expect(info.sandboxId).toBe(sandbox.sandboxId);
    expect(info.name).toBe(TEMPLATE);
    expect(info.state).toBe("running");
    expect(info.endAt.getTime()).toBeGreaterThan(info.startedAt.getTime());
  });

  sandboxTest("metadata is kept and filterable", async () => {
    const marker = `m${Date.now()}`;
    const sbx = await Sandbox.create(TEMPLATE, { ...sdkOpts(), metadata: { marker, "odd key&=": "v/= x" } });
    try {
      expect((await sbx.getInfo()).metadata).toEqual({ marker, "odd key&=": "v/= x" });
      const listed = await Sandbox.list({ ...sdkOpts(), query: { metadata: { "odd key&=": "v/= x", marker } } }).nextItems();
      expect(listed.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
    } finally {
      await sbx.kill();
    }
  });

  sandboxTest("list paginates newest first", async () => {
    const marker = `p${Date.now()}`;
    const a = await Sandbox.create(TEMPLATE, { ...sdkOpts(), metadata: { marker } });
    const b = await Sandbox.create(TEMPLATE, { ...sdkOpts(), metadata: { marker } });
    try {
      const paginator = Sandbox.list({ ...sdkOpts(), limit: 1, query: { metadata: { marker } } });
      const first = await paginator.nextItems();
      expect(first.map((s) => s.sandboxId)).toEqual([b.sandboxId]);
      expect(paginator.hasNext).toBe(true);
      const second = await paginator.nextItems();
      expect(second.map((s) => s.sandboxId)).toEqual([a.sandboxId]);
    } finally {
      await a.kill();
      await b.kill();
    }
  });

  sandboxTest("kill, then kill again returns false, getInfo throws not found", async () => {
    const sbx = await Sandbox.create(TEMPLATE, sdkOpts());
    await sbx.kill();
    expect(await sbx.isRunning()).toBe(false);
    expect(await Sandbox.kill(sbx.sandboxId, sdkOpts())).toBe(false);
    await expect(Sandbox.getInfo(sbx.sandboxId, sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  sandboxTest("setTimeout shortens: the sandbox is gone after it", async () => {
    const sbx = await Sandbox.create(TEMPLATE, sdkOpts());
    await sbx.setTimeout(3_000);
    await new Promise((r) => setTimeout(r, 6_000));
    expect(await sbx.isRunning()).toBe(false);
  }, 30_000);

  sandboxTest("connect returns a usable sandbox and extends its lifetime", async ({ sandbox }) => {
    await sandbox.setTimeout(10_000);
    const again = await Sandbox.connect(sandbox.sandboxId, { ...sdkOpts(), timeoutMs: 60_000 });
    expect((await again.commands.run("echo connected")).stdout).toBe("connected\n");
    expect((await again.getInfo()).endAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
  });

  sandboxTest("legacy SDK (2.45: POST /sandboxes, /sandboxes/:id/connect) works end to end", async () => {
    const sbx = await LegacySandbox.create(TEMPLATE, sdkOpts());
    try {
      expect((await sbx.commands.run("echo legacy")).stdout).toBe("legacy\n");
      const again = await LegacySandbox.connect(sbx.sandboxId, sdkOpts());
      expect(await again.isRunning()).toBe(true);
    } finally {
      await sbx.kill();
    }
  });

  sandboxTest("metrics are available right after create", async ({ sandbox }) => {
    const metrics = await sandbox.getMetrics();
    expect(metrics.length).toBeGreaterThan(0);
    expect(metrics[0]!.cpuCount).toBeGreaterThan(0);
    expect(metrics[0]!.memTotal).toBeGreaterThan(0);
  });

  sandboxTest("unknown template fails with the template named", async () => {
    await expect(Sandbox.create("no-such-template-xyz", sdkOpts())).rejects.toThrow(/no-such-template-xyz/);
  });
});
