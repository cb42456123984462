// The sandboxes list polls its rows' metrics through the batched GET /sandboxes/metrics in real Chromium: each row's
// history is fetched once (GET /sandboxes/{id}/metrics), after that one request per poll carries every visible row,
// and the sparklines keep growing from what it answers.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const COUNT = 3;
const tag = `mbatch-${randomBytes(4).toString("hex")}`;
let dash: DashboardPage;
const ids: string[] = [];

beforeAll(async () => {
  const made = await Promise.all(Array.from({ length: COUNT }, () => Sandbox.create({ ...connection(env), metadata: { suite: tag } })));
  ids.push(...made.map((s) => s.sandboxId));
  dash = await openDashboard(env, { width: 1280, height: 900 });
}, 300_000);

afterAll(async () => {
  await dash?.close();
  await Promise.all(ids.map((id) => Sandbox.kill(id, connection(env)).catch(() => undefined)));
}, 120_000);

describe("dashboard metrics through the batched route", () => {
  it("asks once per poll for all visible rows after each row's history", { timeout: 120_000 }, async () => {
    const { page } = dash;
    const single: Array<{ id: string; at: number }> = [];
    const batched: Array<{ ids: string[]; at: number }> = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === "/sandboxes/metrics") {
        batched.push({ ids: (url.searchParams.get("sandbox_ids") ?? "").split(","), at: Date.now() });
        return;
      }
      const m = /^\/sandboxes\/([^/]+)\/metrics$/.exec(url.pathname);
      if (m) single.push({ id: decodeURIComponent(m[1]!), at: Date.now() });
    });
    await dash.open("");
    await page.fill("#metadata-filter", `suite=${tag}`);
    await page.press("#metadata-filter", "Enter");
    await expect.poll(() => page.locator("#sandbox-count").textContent(), { timeout: 20_000 }).toBe(`${COUNT} sandboxes`);

    // Two batched rounds that name all three rows.
    const full = () => batched.filter((b) => ids.every((id) => b.ids.includes(id)));
    await expect.poll(() => full().length, { timeout: 40_000 }).toBeGreaterThanOrEqual(2);
    // Each row's history was fetched at most once or twice (a round can start before the filter settles), and none
    // after the first batched round.
    for (const id of ids) expect(single.filter((s) => s.id === id).length).toBeGreaterThan(0);
    const firstFull = full()[0]!.at;
    expect(single.filter((s) => ids.includes(s.id) && s.at > firstFull)).toEqual([]);
    // The sparklines grow from the batched samples.
    for (const id of ids) {
      await expect.poll(async () => Number((await page.locator(`tr[data-sandbox-id="${id}"] td.cpu svg.spark`).getAttribute("data-points").catch(() => null)) ?? 0), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    }
    expect(dash.errors).toEqual([]);
  });
});
