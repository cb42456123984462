// The templates pages in real Chromium: a template the official SDK builds in the background shows its build log
// line by line while the build runs, then appears in the list with its tag; a tag is added and removed from its
// page, and it is deleted after a confirmation, which the SDK then sees.
import { randomBytes } from "node:crypto";
import { Template } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "../templates/delete-template.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const name = `dash-tpl-${randomBytes(4).toString("hex")}`;
let dash: DashboardPage;

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await deleteTemplate(env, name);
});

async function tags(templateId: string): Promise<string[]> {
  const res = await fetch(`${env.apiUrl}/templates/${templateId}/tags`, { headers: { "x-api-key": env.apiKey } });
  return ((await res.json()) as { tag: string }[]).map((t) => t.tag).sort();
}

describe("dashboard templates", () => {
  it("follows a build's log live, lists the template, tags it and deletes it", { timeout: 600_000 }, async () => {
    const { page } = dash;
    await dash.open("templates");
    await page.waitForSelector("table");

    // A RUN step that prints a line a second, so the log grows while the build runs.
    const template = Template().fromTemplate("base").runCmd("for i in 1 2 3 4 5 6; do echo tick-$i; sleep 1; done");
    const info = await Template.buildInBackground(template, `${name}:v1`, conn);
    await page.fill("#template-ref", info.templateId);
    await page.press("#template-ref", "Enter");
    await page.waitForURL(`${dash.base}templates/${info.templateId}`);

    // The first tick shows while the build still runs: the page streams, it does not wait for the end.
    const log = page.locator("#build-logs");
    await expect.poll(() => log.textContent(), { timeout: 300_000 }).toContain("tick-1");
    expect(await page.locator("#build-status").textContent()).toBe("building");
    expect(await log.textContent()).not.toContain("tick-6");
    await dash.shot("templates-1-building");
    await expect.poll(() => page.locator("#build-status").textContent(), { timeout: 300_000 }).toBe("ready");
    const text = (await log.textContent()) ?? "";
    for (let i = 1; i <= 6; i++) expect(text).toContain(`tick-${i}`);
    // Each line once: the pages the log was read in neither overlap nor skip.
    expect(text.split("\n").filter((l) => /\btick-\d\s*$/.test(l)).map((l) => l.trim().slice(-6))).toEqual(["tick-1", "tick-2", "tick-3", "tick-4", "tick-5", "tick-6"]);
    await expect.poll(() => page.locator(`#builds tr[data-build-id="${info.buildId}"]`).getAttribute("data-status"), { timeout: 15_000 }).toBe("ready");

    // The list has it now, with its tag and status.
    await page.click("header nav a:has-text('Templates')");
    const row = page.locator(`tr[data-template-id="${info.templateId}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await row.locator("a.open").textContent()).toBe(name);
    expect(await row.locator(".tags").textContent()).toContain("v1");
    expect(await row.locator(".state").textContent()).toBe("ready");
    await dash.shot("templates-2-list");

    // Tags from its page: add one on the build of v1, then remove it.
    await row.locator("a.open").click();
    await page.waitForSelector("#tags");
    await page.fill("#new-tag", "stable");
    await page.selectOption(".add-tag select", "v1");
    await page.click(".add-tag button[type=submit]");
    await expect.poll(() => tags(info.templateId), { timeout: 15_000 }).toContain("stable");
    await page.locator('#tags li[data-tag="stable"]').waitFor({ timeout: 15_000 });
    await dash.shot("templates-3-template");
    await page.locator('#tags li[data-tag="stable"] button.remove-tag').click();
    await expect.poll(() => tags(info.templateId), { timeout: 15_000 }).not.toContain("stable");

    // Delete asks first; cancel keeps it, confirm removes it.
    await page.click("button.delete");
    await page.click(".confirm button.cancel");
    expect(await Template.exists(name, conn)).toBe(true);
    await page.click("button.delete");
    await page.click(".confirm button.confirm-delete");
    await page.waitForURL(`${dash.base}templates`);
    await expect.poll(() => Template.exists(name, conn), { timeout: 15_000 }).toBe(false);
    await expect.poll(() => row.count(), { timeout: 15_000 }).toBe(0);

    expect(dash.errors).toEqual([]);
  });
});
