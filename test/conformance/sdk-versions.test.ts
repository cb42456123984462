// The core of the API through both pinned SDKs: e2b 2.51.0 (POST /v2/sandboxes, /v2/sandboxes/:id/connect) and
// e2b 2.45.0 (POST /sandboxes, /sandboxes/:id/connect), so that both path families stay served.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { Sandbox as CurrentSandbox } from "e2b";
import { Sandbox as LegacySandbox } from "e2b-legacy";
import { hasBurrowEnv, sdkOpts, TEMPLATE } from "./env.js";

// The calls below exist with the same signatures in both versions; typing both as 2.51's class keeps the body
// callable (a union of the two classes is not).
const sdks: [string, typeof CurrentSandbox][] = [
  ["e2b 2.51.0", CurrentSandbox],
  ["e2b 2.45.0 (legacy paths)", LegacySandbox as unknown as typeof CurrentSandbox],
];

const maybe = hasBurrowEnv ? describe : describe.skip;

/** The installed bundle of a package, to check which REST paths it calls. */
function bundleOf(pkg: string): { version: string; source: string } {
  const dir = dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  return { version, source: readFileSync(join(dir, "dist", "index.mjs"), "utf8") };
}

test("the two pinned SDKs really use the two path families", () => {
  const current = bundleOf("e2b");
  const legacy = bundleOf("e2b-legacy");
  expect(current.version).toBe("2.51.0");
  expect(legacy.version).toBe("2.45.0");
  expect(current.source).toContain('POST("/v2/sandboxes"');
  expect(current.source).toContain('POST("/v2/sandboxes/{sandboxID}/connect"');
  expect(legacy.source).toContain('POST("/sandboxes"');
  expect(legacy.source).toContain('POST("/sandboxes/{sandboxID}/connect"');
  expect(legacy.source).not.toContain('POST("/v2/sandboxes');
});

maybe.each(sdks)("%s", (_name, Sandbox) => {
  test("create, getInfo, list, connect, commands, files, kill", async () => {
    const marker = `v${Date.now()}${Math.random().toString(36).slice(2, 8)}`;
    const odd = { "odd key&=": "v/= x%20+ü" };
    const sbx = await Sandbox.create(TEMPLATE, { ...sdkOpts(), metadata: { marker, ...odd }, envs: { FROM_CREATE: "yes" }, timeoutMs: 120_000 });
    try {
      expect(sbx.sandboxId).toMatch(/^[a-z0-9]+$/);
      expect(await sbx.isRunning()).toBe(true);

      const info = await Sandbox.getInfo(sbx.sandboxId, sdkOpts());
      expect(info).toMatchObject({ sandboxId: sbx.sandboxId, state: "running", metadata: { marker, ...odd } });

      const listed = await Sandbox.list({ ...sdkOpts(), query: { metadata: { marker } } }).nextItems();
      expect(listed.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
      // Metadata filters survive each version's encoding, special characters included.
      const byOdd = await Sandbox.list({ ...sdkOpts(), query: { metadata: { ...odd, marker }, state: ["running"] } }).nextItems();
      expect(byOdd.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
      expect(await Sandbox.list({ ...sdkOpts(), query: { metadata: { marker, "odd key&=": "v/= x" } } }).nextItems()).toEqual([]);

      const run = await sbx.commands.run('echo "$FROM_CREATE $(whoami)"');
      expect(run).toMatchObject({ exitCode: 0, stdout: "yes user\n" });
      const bg = await sbx.commands.run("sleep 60", { background: true });
      expect((await sbx.commands.list()).map((p) => p.pid)).toContain(bg.pid);
      expect(await sbx.commands.kill(bg.pid)).toBe(true);

      await sbx.files.write("/home/user/v.txt", "versioned");
      expect(await sbx.files.read("/home/user/v.txt")).toBe("versioned");
      await sbx.files.write([{ path: "/home/user/w1.txt", data: "1" }, { path: "/home/user/w2.txt", data: "2" }]);
      expect((await sbx.files.list("/home/user")).map((e) => e.name)).toEqual(expect.arrayContaining(["v.txt", "w1.txt", "w2.txt"]));

      const again = await Sandbox.connect(sbx.sandboxId, { ...sdkOpts(), timeoutMs: 200_000 });
      expect(again.sandboxId).toBe(sbx.sandboxId);
      expect((await again.commands.run("cat /home/user/w2.txt")).stdout).toBe("2");
      expect((await again.getInfo()).endAt.getTime()).toBeGreaterThan(Date.now() + 150_000);
    } finally {
      expect(await Sandbox.kill(sbx.sandboxId, sdkOpts())).toBe(true);
    }
    expect(await Sandbox.kill(sbx.sandboxId, sdkOpts())).toBe(false);
    await expect(Sandbox.getInfo(sbx.sandboxId, sdkOpts())).rejects.toThrow(/not found/i);
    await expect(Sandbox.connect(sbx.sandboxId, sdkOpts())).rejects.toThrow();
    expect(await sbx.isRunning()).toBe(false);
  });
});
