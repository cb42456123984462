// Pool fill on the server page in real Chromium: the test server keeps a warm pool of 2 `base` sandboxes; the stats
// JSON and /metrics report its target, ready and starting alike, a create through the official SDK takes one (ready
// drops below the target) and the pool refills, and the page shows the pool full again.
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
let dash: DashboardPage;
let sandbox: Sandbox | undefined;

interface Pool {
  template: string;
  kind: string;
  target: number;
  ready: number;
  starting: number;
}

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await sandbox?.kill().catch(() => undefined);
});

async function basePool(): Promise<Pool | undefined> {
  const res = await fetch(`${env.apiUrl}/burrow/v1/server/stats`, { headers: { "x-api-key": env.apiKey } });
  const stats = (await res.json()) as { pools: Pool[] };
  return stats.pools.find((p) => p.template === "base" && p.kind === "warm");
}

async function metric(state: string): Promise<number | undefined> {
  const text = await (await fetch(`${env.apiUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`burrow_pool_sandboxes{template="base",kind="warm",state="${state}"}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

describe("dashboard pool fill", () => {
  it("reports the warm pool's fill, drained by a create and refilled", { timeout: 240_000 }, async () => {
    // Other suites share this server and take pooled sandboxes at any time: each view is polled until it shows the
    // pool full in one reading, rather than read once after another reading showed it full.
    const full = { template: "base", kind: "warm", target: 2, ready: 2, starting: 0 };
    await expect.poll(() => basePool(), { timeout: 180_000, interval: 500 }).toEqual(full);
    await expect
      .poll(async () => [await metric("target"), await metric("ready"), await metric("starting")], { timeout: 60_000, interval: 500 })
      .toEqual([2, 2, 0]);

    const { page } = dash;
    await dash.open("server");
    const card = page.locator('#pool-fill .pool[data-template="base"][data-kind="warm"]');
    await card.waitFor({ timeout: 15_000 });
    expect(await card.getAttribute("data-target")).toBe("2");
    await expect.poll(() => card.getAttribute("data-ready"), { timeout: 15_000 }).toBe("2");

    // A create claims a pooled sandbox: the pool is short of its target until the refill's launch ends.
    sandbox = await Sandbox.create(connection(env));
    let seenShort = false;
    for (let i = 0; i < 100 && !seenShort; i++) {
      const p = (await basePool())!;
      seenShort = p.ready < p.target;
      if (!seenShort) await new Promise((r) => setTimeout(r, 20));
    }
    expect(seenShort).toBe(true);
    await expect.poll(() => card.getAttribute("data-ready"), { timeout: 120_000, interval: 500 }).toBe("2");
    expect(await card.textContent()).toMatch(/2 of 2 ready/);
    await dash.shot("server-pool-fill");
    await sandbox.kill();
    sandbox = undefined;
    expect(dash.errors).toEqual([]);
  });
});
