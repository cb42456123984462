// The queues panel of the bus page in real Chromium: a queue's depth moves live as the bus API enqueues and
// dead-letters; its dead letters are inspected on the page, one is requeued (and comes back to a consumer as a
// first attempt), the rest dropped with a confirmation.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { keyedApi } from "../helpers/keyed-api.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const call = keyedApi(env.apiUrl, env.apiKey);
const queue = `dash-ops-${randomBytes(4).toString("hex")}`;
const Q = `/burrow/v1/queues/${queue}`;
let dash: DashboardPage;

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await call("DELETE", `${Q}/dead-letters`).catch(() => undefined);
});

/** Consumes and nacks until the queue hands out nothing: everything in it is dead-lettered. */
async function killAll(): Promise<void> {
  for (;;) {
    const m = await call("POST", `${Q}/consume`, { timeoutMs: 2000 });
    if (m.status === 204) return;
    expect(m.status).toBe(200);
    expect((await call("POST", `${Q}/messages/${m.json.receipt}/nack`, { delayMs: 0 })).status).toBe(204);
  }
}

describe("dashboard queues panel", () => {
  it("shows depth live, inspects dead letters, requeues one and drops the rest", { timeout: 90_000 }, async () => {
    const { page } = dash;
    for (const data of ["doomed-1", "doomed-2"]) expect((await call("POST", `${Q}/messages`, { data, headers: { "x-job": data } })).status).toBe(201);
    await dash.open("bus");
    const row = page.locator(`#queues tr[data-queue="${queue}"]`);
    await row.waitFor({ timeout: 15_000 });
    await expect.poll(() => row.locator(".ready").textContent(), { timeout: 10_000 }).toBe("2");

    await killAll();
    expect((await call("POST", `${Q}/messages`, { data: "waiting" })).status).toBe(201);
    await expect.poll(() => row.locator(".dead").textContent(), { timeout: 10_000 }).toBe("2");
    await expect.poll(() => row.locator(".ready").textContent(), { timeout: 10_000 }).toBe("1");

    await row.locator("button.inspect").click();
    const letters = page.locator(`#queue-dead-letters[data-queue="${queue}"] tr.dead-letter`);
    await expect.poll(() => letters.count(), { timeout: 10_000 }).toBe(2);
    const first = letters.nth(0);
    expect(await first.locator(".payload").textContent()).toBe("doomed-1");
    expect(await first.locator(".attempts").textContent()).toBe("5");
    expect(await first.getAttribute("data-reason")).toBe("max_deliver");
    expect(await first.textContent()).toContain("x-job=doomed-1");
    await dash.shot("bus-queues");

    await first.locator("button.requeue").click();
    await expect.poll(() => letters.count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => row.locator(".ready").textContent(), { timeout: 10_000 }).toBe("2");
    expect(await row.locator(".dead").textContent()).toBe("1");
    // Back on the queue as a new message, after the one that was waiting.
    const got: string[] = [];
    for (let i = 0; i < 2; i++) {
      const m = await call("POST", `${Q}/consume`, { timeoutMs: 5000 });
      got.push(`${m.json.data}@${m.json.attempt}`);
      expect((await call("POST", `${Q}/messages/${m.json.receipt}/ack`)).status).toBe(204);
    }
    expect(got).toEqual(["waiting@1", "doomed-1@1"]);

    await page.click("#drop-all");
    await page.click("#drop-all-confirm");
    await expect.poll(() => letters.count(), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => row.locator(".dead").textContent(), { timeout: 10_000 }).toBe("0");
    expect(await page.locator("#queue-dead-note").textContent()).toBe("dropped 1");
    expect((await call("GET", Q)).json).toEqual({ name: queue, ready: 0, inFlight: 0, deadLetters: 0 });
    expect(dash.errors).toEqual([]);
  });
});
