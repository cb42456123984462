// The agent bus page in real Chromium: a message published with the bus API after the page subscribed arrives on
// the page live (SSE), counted under its subject; a message on another subject does not; an agent that sends a
// heartbeat shows up with its state; a queue message nacked past its attempts shows up as a dead letter.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const tag = randomBytes(4).toString("hex");
let dash: DashboardPage;

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
});

async function post(path: string, body: unknown): Promise<number> {
  const res = await fetch(`${env.apiUrl}${path}`, { method: "POST", headers: { "x-api-key": env.apiKey, "content-type": "application/json" }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

describe("dashboard bus page", () => {
  it("shows messages published with the bus API as they arrive, and agents with their heartbeat state", { timeout: 60_000 }, async () => {
    const { page } = dash;
    await dash.open("bus");
    await page.fill("#bus-subject", `dash.${tag}.>`);
    await page.click("#bus-subscribe");
    await page.waitForSelector("#bus-status:has-text('subscribed')", { timeout: 15_000 });
    expect(new URL(page.url()).searchParams.get("subject")).toBe(`dash.${tag}.>`);

    expect(await post("/burrow/v1/bus/publish", { subject: `dash.${tag}.orders`, data: `order-1 ${tag}`, headers: { "x-kind": "test" } })).toBe(202);
    expect(await post("/burrow/v1/bus/publish", { subject: `other.${tag}.orders`, data: "not this one" })).toBe(202);
    expect(await post("/burrow/v1/bus/publish", { subject: `dash.${tag}.orders`, data: `order-2 ${tag}` })).toBe(202);
    const items = page.locator(`#bus-messages li[data-subject="dash.${tag}.orders"]`);
    await expect.poll(() => items.count(), { timeout: 15_000 }).toBe(2);
    // Newest first.
    expect(await items.nth(0).textContent()).toContain(`order-2 ${tag}`);
    expect(await items.nth(1).textContent()).toContain(`order-1 ${tag}`);
    expect(await items.nth(1).textContent()).toContain("x-kind=test");
    expect(await page.locator("#bus-messages li").count()).toBe(2);
    expect(await page.locator(`#bus-subjects tr[data-subject="dash.${tag}.orders"] td`).nth(1).textContent()).toBe("2");

    // The page's own publish form goes through the same API and comes back on the stream.
    await page.fill("#publish-subject", `dash.${tag}.notes`);
    await page.fill("#publish-data", "from the page");
    await page.click(".publish button[type=submit]");
    await page.locator(`#bus-messages li[data-subject="dash.${tag}.notes"]:has-text("from the page")`).waitFor({ timeout: 15_000 });

    const agentId = `dash-agent-${tag}`;
    expect(await post(`/burrow/v1/agents/${agentId}/heartbeat`, { group: "dashboard-test", meta: { role: "tester" } })).toBe(204);
    const agent = page.locator(`#agents tr[data-agent-id="${agentId}"]`);
    await agent.waitFor({ timeout: 15_000 });
    expect(await agent.getAttribute("data-state")).toBe("up");
    expect(await agent.textContent()).toContain("role=tester");

    // A queue message nacked on every one of its 5 attempts is dead-lettered, and the page sees it moved.
    await page.waitForSelector("#dlq-status:has-text('watching')", { timeout: 15_000 });
    const queue = `dash-q-${tag}`;
    expect(await post(`/burrow/v1/queues/${queue}/messages`, { data: `job ${tag}` })).toBe(201);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const res = await fetch(`${env.apiUrl}/burrow/v1/queues/${queue}/consume`, { method: "POST", headers: { "x-api-key": env.apiKey, "content-type": "application/json" }, body: JSON.stringify({ timeoutMs: 10_000 }) });
      expect(res.status).toBe(200);
      const m = (await res.json()) as { receipt: string; attempt: number };
      expect(m.attempt).toBe(attempt);
      expect(await post(`/burrow/v1/queues/${queue}/messages/${m.receipt}/nack`, { delayMs: 0 })).toBe(204);
    }
    const dead = page.locator(`#dead-letters tr[data-source="queue ${queue}"]`);
    await dead.waitFor({ timeout: 15_000 });
    expect(await dead.getAttribute("data-reason")).toBe("max_deliver");
    expect(await dead.textContent()).toContain(`job ${tag}`);
    expect(await dead.locator("td").nth(3).textContent()).toBe("5");
    await dash.shot("bus-1");
    expect(dash.errors).toEqual([]);
  });

  it("fits a phone-sized screen", { timeout: 60_000 }, async () => {
    const phone = await openDashboard(env, { width: 390, height: 844 });
    try {
      await phone.open(`bus?subject=${encodeURIComponent(`dash.${tag}.>`)}`);
      await phone.page.waitForSelector("#bus-status:has-text('subscribed')", { timeout: 15_000 });
      expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await phone.shot("bus-phone");
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});
