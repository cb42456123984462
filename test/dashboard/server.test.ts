// The server page in real Chromium: the running count and the create counter move when the official SDK creates a
// sandbox and back when it is killed, claim times are listed by source, disk space is shown; the JSON endpoint
// behind it agrees with /metrics. Also a phone-sized screenshot of the page.
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
let dash: DashboardPage;
let sandbox: Sandbox | undefined;

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await sandbox?.kill().catch(() => undefined);
});

async function metric(line: RegExp): Promise<number> {
  const text = await (await fetch(`${env.apiUrl}/metrics`)).text();
  const found = text.split("\n").find((l) => line.test(l));
  return found ? Number(found.split(" ").at(-1)) : 0;
}

describe("dashboard server page", () => {
  it("answers the figures as JSON, behind the key, in step with /metrics", async () => {
    expect((await fetch(`${env.apiUrl}/burrow/v1/server/stats`)).status).toBe(401);
    const res = await fetch(`${env.apiUrl}/burrow/v1/server/stats`, { headers: { "x-api-key": env.apiKey } });
    expect(res.status).toBe(200);
    const stats = (await res.json()) as { sandboxes: Record<string, number>; creates: Record<string, number>; disks: { name: string; totalBytes: number; freeBytes: number }[] };
    expect(stats.sandboxes["running"]).toBe(await metric(/^burrow_sandboxes\{state="running"\}/));
    expect(stats.creates["ok"]).toBe(await metric(/^burrow_sandbox_creates_total\{result="ok"\}/));
    expect(stats.disks.map((d) => d.name)).toContain("state");
    for (const d of stats.disks) expect(d.totalBytes).toBeGreaterThanOrEqual(d.freeBytes);
    // The histogram's buckets add up to its count; the last one holds what is above the largest bound.
    const latency = (stats as unknown as { createLatency: { count: number; buckets: { upToMs: number | null; count: number }[] } }).createLatency;
    expect(latency.buckets.reduce((sum, b) => sum + b.count, 0)).toBe(latency.count);
    expect(latency.buckets.at(-1)?.upToMs).toBeNull();
    // One machine: no cluster, and the page draws no nodes card (test/cluster/dashboard-nodes.test.ts has one).
    expect((stats as unknown as { cluster: unknown }).cluster).toBeNull();
  });

  it("shows the running count and creates change when the SDK creates and kills a sandbox", { timeout: 120_000 }, async () => {
    const { page } = dash;
    await dash.open("server");
    const running = page.locator('#sandboxes-by-state [data-state="running"] .value');
    await running.waitFor();
    const value = async () => Number(await running.textContent());
    const before = await value();
    const createsBefore = (await page.locator("#creates-total").textContent()) ?? "";

    sandbox = await Sandbox.create(connection(env));
    await expect.poll(value, { timeout: 15_000 }).toBe(before + 1);
    await expect.poll(() => page.locator("#creates-total").textContent(), { timeout: 15_000 }).not.toBe(createsBefore);
    // The create was claimed from the pool or launched: its source has a row with a count.
    await expect.poll(() => page.locator("#claims tbody tr").count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.locator("#creates-per-minute").textContent(), { timeout: 15_000 }).not.toBe("–");
    expect(await page.locator('#disks [data-disk="state"]').textContent()).toMatch(/used/);
    expect(await page.locator("#cluster-nodes").count()).toBe(0);
    // The create is in the latency histogram: at least one bar.
    await expect.poll(() => page.locator("#create-latency-histogram rect").count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await dash.shot("server-1");

    await sandbox.kill();
    sandbox = undefined;
    await expect.poll(value, { timeout: 15_000 }).toBe(before);
    expect(dash.errors).toEqual([]);
  });

  it("fits a phone-sized screen", { timeout: 120_000 }, async () => {
    const phone = await openDashboard(env, { width: 390, height: 844 });
    try {
      await phone.open("server");
      await phone.page.locator('#sandboxes-by-state [data-state="running"] .value').waitFor();
      // Nothing wider than the screen: the page does not scroll sideways.
      expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await phone.shot("server-phone");
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});
