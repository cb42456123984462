// The REST control plane driven by the official SDK, current (2.51, /v2 paths) and legacy (2.45, v1 paths).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox as Sandbox251, SandboxError, SandboxNotFoundError } from "e2b";
import { Sandbox as Sandbox245 } from "e2b-legacy";
import { ENVD_VERSION } from "@burrow/protocol";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe.each([
  ["e2b 2.51", Sandbox251, "/v2/sandboxes"],
  ["e2b 2.45", Sandbox245 as unknown as typeof Sandbox251, "/sandboxes"],
] as const)("%s", (_name, Sandbox, createPath) => {
  it("creates, inspects, extends and kills a sandbox", async () => {
    const sbx = await Sandbox.create("base", { ...t.sdkOpts, metadata: { owner: "test" }, envs: { A: "1" }, timeoutMs: 60_000 });
    expect(sbx.sandboxId).toMatch(/^[a-z0-9]+$/);
    const stub = t.stub.sandboxes.get(sbx.sandboxId)!;
    expect(stub.envVars).toEqual({ A: "1" });
    // The SDK keeps the token from create for envd calls.
    expect(stub.envdAccessToken).toMatch(/^[0-9a-f]{48}$/);

    const info = await sbx.getInfo();
    expect(info).toMatchObject({
      sandboxId: sbx.sandboxId,
      templateId: "tplbase0000000000000",
      name: "base",
      metadata: { owner: "test" },
      envdVersion: ENVD_VERSION,
      state: "running",
      cpuCount: 2,
      memoryMB: 512,
    });
    expect(info.endAt.getTime() - info.startedAt.getTime()).toBeGreaterThan(55_000);

    // isRunning() goes through the gateway to the sandbox's /health, routed by E2b-Sandbox-Id.
    expect(await sbx.isRunning()).toBe(true);

    await sbx.setTimeout(120_000);
    const extended = await sbx.getInfo();
    expect(extended.endAt.getTime()).toBeGreaterThan(Date.now() + 110_000);

    const connected = await Sandbox.connect(sbx.sandboxId, t.sdkOpts);
    expect(connected.sandboxId).toBe(sbx.sandboxId);
    // Connect with the default (300 s) extends; it never shortens.
    expect((await connected.getInfo()).endAt.getTime()).toBeGreaterThan(Date.now() + 290_000);

    const metrics = await sbx.getMetrics();
    expect(metrics.length).toBeGreaterThan(0);
    expect(metrics[0]).toMatchObject({ cpuCount: 2, cpuUsedPct: 1.5 });

    await sbx.kill();
    expect(t.stub.sandboxes.has(sbx.sandboxId)).toBe(false);
    expect(await sbx.isRunning()).toBe(false);
    expect(await Sandbox.kill(sbx.sandboxId, t.sdkOpts)).toBe(false);
    // Each SDK copy has its own error classes: compare by name.
    await expect(Sandbox.getInfo(sbx.sandboxId, t.sdkOpts)).rejects.toMatchObject({ name: SandboxNotFoundError.name });
    await expect(Sandbox.connect(sbx.sandboxId, t.sdkOpts)).rejects.toThrow();
  });

  it(`uses ${createPath} and rejects unknown templates with E2B's 404`, async () => {
    const err = await Sandbox.create("no-such-template", t.sdkOpts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain("404: template 'no-such-template' not found");
    expect((err as Error).name).toBe(SandboxError.name);
  });

  it("lists with metadata filters", async () => {
    const a = await Sandbox.create("base", { ...t.sdkOpts, metadata: { suite: "sdk", "k&=": "v/= x" } });
    const b = await Sandbox.create("base", { ...t.sdkOpts, metadata: { suite: "sdk" } });
    try {
      const page = await Sandbox.list({ ...t.sdkOpts, query: { metadata: { "k&=": "v/= x" } } }).nextItems();
      expect(page.map((s) => s.sandboxId)).toEqual([a.sandboxId]);
      const all = await Sandbox.list({ ...t.sdkOpts, query: { metadata: { suite: "sdk" }, state: ["running"] } }).nextItems();
      expect(all.map((s) => s.sandboxId)).toEqual([b.sandboxId, a.sandboxId]);
    } finally {
      await a.kill();
      await b.kill();
    }
  });
});

it("answers 501 in E2B's shape for pause", async () => {
  const sbx = await Sandbox251.create("base", t.sdkOpts);
  try {
    await expect(sbx.pause()).rejects.toThrow(/501: pausing sandboxes is not supported/);
  } finally {
    await sbx.kill();
  }
});
