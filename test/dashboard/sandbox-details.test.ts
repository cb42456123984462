// One sandbox's page in real Chromium: CPU/memory/disk charts drawn from its metric samples, a process the official
// SDK starts in its process list (and ended from the page), its lifecycle settings as GET /sandboxes/{id} has
// them. (Its events panel is checked in checkpoints.test.ts, where checkpoints make lifecycle events.)
import { randomBytes } from "node:crypto";
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

describe("dashboard sandbox page", () => {
  it("draws resource charts, lists and ends processes, shows settings", { timeout: 120_000 }, async () => {
    const { page } = dash;
    const tag = `details-${randomBytes(4).toString("hex")}`;
    sandbox = await Sandbox.create({ ...connection(env), metadata: { suite: tag }, lifecycle: { onTimeout: "pause" } });
    await dash.open(`sandboxes/${sandbox.sandboxId}`);

    await expect.poll(() => page.locator("#sandbox-settings dd[data-setting='lifecycle.onTimeout']").textContent(), { timeout: 15_000 }).toBe("pause");
    expect(await page.locator("#sandbox-settings dd[data-setting='metadata.suite']").textContent()).toBe(tag);

    // Started after the page is up: it has to come through envd's list.
    const marker = `sleep ${4000 + Math.floor(Math.random() * 1000)}`;
    const handle = await sandbox.commands.run(marker, { background: true });
    const row = page.locator(`#process-list tr[data-pid="${handle.pid}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await row.locator("td.cmd").textContent()).toContain(marker);

    // The page ends it: the SDK sees it gone.
    await row.locator("button.danger").click();
    await expect.poll(async () => (await sandbox!.commands.list()).some((p) => p.pid === handle.pid), { timeout: 15_000 }).toBe(false);
    await expect.poll(() => row.count(), { timeout: 15_000 }).toBe(0);

    // Samples are taken every few seconds; each chart draws a line once it has two.
    for (const chart of ["#chart-cpu", "#chart-memory", "#chart-disk"]) {
      await expect.poll(async () => Number(await page.locator(chart).getAttribute("data-points")), { timeout: 40_000 }).toBeGreaterThanOrEqual(2);
      const points = (await page.locator(`${chart} polyline`).getAttribute("points"))!.trim().split(" ");
      expect(points.length).toBeGreaterThanOrEqual(2);
      for (const p of points) expect(p).toMatch(/^\d+(\.\d+)?,-?\d+(\.\d+)?$/);
    }
    const metrics = await sandbox.getMetrics();
    expect(Number(await page.locator("#chart-memory").getAttribute("data-points"))).toBeLessThanOrEqual(metrics.length + 1);
    await dash.shot("sandbox-details");
    expect(dash.errors).toEqual([]);
  });

  it("fits a phone-sized screen, the sandbox's page and the list", { timeout: 60_000 }, async () => {
    const phone = await openDashboard(env, { width: 390, height: 844 });
    try {
      await phone.open(`sandboxes/${sandbox!.sandboxId}`);
      await phone.page.waitForSelector("#terminal-status:has-text('connected')", { timeout: 30_000 });
      await phone.page.waitForSelector("#process-list tbody tr");
      expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await phone.shot("sandbox-phone");
      await phone.open("");
      await phone.page.locator(`tr[data-sandbox-id="${sandbox!.sandboxId}"]`).waitFor({ timeout: 15_000 });
      expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await phone.shot("sandboxes-phone");
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});
