// The sandboxes list with many real sandboxes in real Chromium: 30 idle sandboxes (one metadata tag, filtered to
// it) in a short viewport render only the rows on screen, only those rows fetch metrics (and draw sparklines), and
// scrolling to the end brings in the oldest while the newest leave the DOM.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const COUNT = 30;
const tag = `many-${randomBytes(4).toString("hex")}`;
let dash: DashboardPage;
const ids: string[] = [];

beforeAll(async () => {
  // Created one batch after another, so their start times order them (the list shows the newest first).
  for (let i = 0; i < COUNT; i += 5) {
    const batch = await Promise.all(Array.from({ length: Math.min(5, COUNT - i) }, () => Sandbox.create({ ...connection(env), metadata: { suite: tag } })));
    ids.push(...batch.map((s) => s.sandboxId));
  }
  dash = await openDashboard(env, { width: 1280, height: 600 });
}, 300_000);

afterAll(async () => {
  await dash?.close();
  await Promise.all(ids.map((id) => Sandbox.kill(id, connection(env)).catch(() => undefined)));
}, 120_000);

describe("dashboard with many sandboxes", () => {
  it("renders only the visible rows, fetches their metrics only, and scrolls to the rest", { timeout: 180_000 }, async () => {
    const { page } = dash;
    const metricsOf = new Set<string>();
    page.on("request", (request) => {
      const m = /\/sandboxes\/([^/]+)\/metrics/.exec(request.url());
      if (m) metricsOf.add(decodeURIComponent(m[1]!));
    });
    await dash.open("");
    await page.fill("#metadata-filter", `suite=${tag}`);
    await page.press("#metadata-filter", "Enter");
    await expect.poll(() => page.locator("#sandbox-count").textContent(), { timeout: 20_000 }).toBe(`${COUNT} sandboxes`);
    const rows = page.locator("tbody tr[data-sandbox-id]");
    await rows.first().waitFor();
    const rendered = await rows.count();
    expect(rendered).toBeGreaterThan(0);
    expect(rendered).toBeLessThan(COUNT);
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-sandbox-id")!));

    // A visible row draws its CPU sparkline once two samples are in; no metrics were asked for rows not rendered.
    const firstRow = rows.first();
    await expect.poll(async () => Number((await firstRow.locator("td.cpu svg.spark").getAttribute("data-points").catch(() => null)) ?? 0), { timeout: 40_000 }).toBeGreaterThanOrEqual(2);
    expect(metricsOf.size).toBeGreaterThan(0);
    for (const id of metricsOf) expect(shown).toContain(id);
    await dash.shot("many-top");

    // The oldest (created first) is at the end of the list: not in the DOM until scrolled to.
    const oldest = ids[0]!;
    expect(shown).not.toContain(oldest);
    await page.locator(".table-wrap.virtual").evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await page.locator(`tr[data-sandbox-id="${oldest}"]`).waitFor({ timeout: 10_000 });
    await expect.poll(() => page.locator(`tr[data-sandbox-id="${shown[0]}"]`).count()).toBe(0);
    expect(await rows.count()).toBeLessThan(COUNT);
    await expect.poll(() => metricsOf.has(oldest), { timeout: 15_000 }).toBe(true);
    await dash.shot("many-bottom");
    expect(dash.errors).toEqual([]);
  });
});
