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

  sandboxTest("metadata is kept and filterable", async ({ spawn }) => {
    const marker = `m${Date.now()}`;
    const sbx = await spawn({ metadata: { marker, "odd key&=": "v/= x" } });
    try {
      expect((await sbx.getInfo()).metadata).toEqual({ marker, "odd key&=": "v/= x" });
      const listed = await Sandbox.list({ ...sdkOpts(), query: { metadata: { "odd key&=": "v/= x", marker } } }).nextItems();
      expect(listed.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
    } finally {
      await sbx.kill();
    }
  });

  sandboxTest("list paginates newest first", async ({ spawn }) => {
    const marker = `p${Date.now()}`;
    const a = await spawn({ metadata: { marker } });
    const b = await spawn({ metadata: { marker } });
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

  sandboxTest("kill, then kill again returns false, getInfo throws not found", async ({ spawn }) => {
    const sbx = await spawn();
    await sbx.kill();
    expect(await sbx.isRunning()).toBe(false);
    expect(await Sandbox.kill(sbx.sandboxId, sdkOpts())).toBe(false);
    await expect(Sandbox.getInfo(sbx.sandboxId, sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  sandboxTest("setTimeout shortens: the sandbox is gone after it", async ({ spawn }) => {
    const sbx = await spawn();
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

describe("sandbox lifecycle: more", () => {
  sandboxTest("getInfo fields match the create response and the sandbox itself", async ({ sandbox }) => {
    const info = await Sandbox.getInfo(sandbox.sandboxId, sdkOpts());
    expect(info).toMatchObject({ sandboxId: sandbox.sandboxId, state: "running", metadata: {} });
    expect(info.templateId).toMatch(/\S/);
    expect(info.cpuCount).toBeGreaterThan(0);
    expect(info.memoryMB).toBeGreaterThan(0);
    expect(info.envdVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(info.startedAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect((await sandbox.commands.run("nproc")).stdout.trim()).toBe(String(info.cpuCount));
  });

  sandboxTest("create timeoutMs sets endAt; setTimeout lengthens and shortens it", async ({ spawn }) => {
    const sbx = await spawn({ timeoutMs: 60_000 });
    try {
      const first = await sbx.getInfo();
      expect(first.endAt.getTime() - first.startedAt.getTime()).toBeGreaterThanOrEqual(59_000);
      expect(first.endAt.getTime() - first.startedAt.getTime()).toBeLessThanOrEqual(61_000);
      await sbx.setTimeout(600_000);
      expect((await sbx.getInfo()).endAt.getTime()).toBeGreaterThan(Date.now() + 590_000);
      await Sandbox.setTimeout(sbx.sandboxId, 30_000, sdkOpts());
      const shorter = (await sbx.getInfo()).endAt.getTime();
      expect(shorter).toBeLessThan(Date.now() + 31_000);
      expect(await sbx.isRunning()).toBe(true);
    } finally {
      await sbx.kill();
    }
  });

  sandboxTest("setTimeout, connect and getInfo of a missing sandbox say not found", async () => {
    await expect(Sandbox.setTimeout("nosuchsandbox0000000", 10_000, sdkOpts())).rejects.toThrow(/not found/i);
    await expect(Sandbox.connect("nosuchsandbox0000000", sdkOpts())).rejects.toThrow(/not found/i);
    await expect(Sandbox.getInfo("nosuchsandbox0000000", sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  sandboxTest("connect does not shorten a longer timeout", async ({ sandbox }) => {
    await sandbox.setTimeout(600_000);
    await Sandbox.connect(sandbox.sandboxId, { ...sdkOpts(), timeoutMs: 10_000 });
    expect((await sandbox.getInfo()).endAt.getTime()).toBeGreaterThan(Date.now() + 500_000);
  });

  sandboxTest("isRunning follows kill, and the static kill works", async ({ spawn }) => {
    const sbx = await spawn();
    expect(await sbx.isRunning()).toBe(true);
    expect(await Sandbox.kill(sbx.sandboxId, sdkOpts())).toBe(true);
    expect(await sbx.isRunning()).toBe(false);
    expect(await sbx.kill()).toBe(false);
  });

  sandboxTest("sandboxes are separate computers: files and processes are not shared", async ({ sandbox, spawn }) => {
    const other = await spawn();
    try {
      await sandbox.files.write("/tmp/only-here", "1");
      expect(await other.files.exists("/tmp/only-here")).toBe(false);
      const bg = await sandbox.commands.run("sleep 77", { background: true });
      expect((await other.commands.list()).map((p) => p.pid)).not.toContain(bg.pid);
      expect((await sandbox.commands.run("pgrep -f 'slee[p] 77'")).stdout.trim()).toBe(String(bg.pid));
      expect((await other.commands.run("pgrep -f 'slee[p] 77' || echo none")).stdout.trim()).toBe("none");
    } finally {
      await other.kill();
    }
  });
});
