// A sandbox's checkpoint tree on its page in real Chromium: two checkpoints taken from the page (the second after a
// file changed) are drawn parent over child, their lifecycle events arrive in the events panel, a rollback to the
// first from the page restores its files (checked with the official SDK), and a branch from it starts a sandbox.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
let dash: DashboardPage;
let sandbox: Sandbox | undefined;
const branched: string[] = [];

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await sandbox?.kill().catch(() => undefined);
  for (const id of branched) await Sandbox.kill(id, connection(env)).catch(() => undefined);
  const tree = sandbox && (await fetch(`${env.apiUrl}/burrow/v1/sandboxes/${sandbox.sandboxId}/checkpoints`, { headers: { "x-api-key": env.apiKey } }).then((r) => r.json() as Promise<{ checkpoints?: { checkpointID: string; parentID: string | null }[] }>).catch(() => undefined));
  for (const root of tree?.checkpoints?.filter((c) => c.parentID === null) ?? []) {
    await fetch(`${env.apiUrl}/burrow/v1/checkpoints/${root.checkpointID}?cascade=true`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
  }
});

describe("dashboard checkpoint tree", () => {
  it("draws two checkpoints as a tree, rolls back and branches from the page", { timeout: 180_000 }, async () => {
    const { page } = dash;
    const tag = `tree-${randomBytes(4).toString("hex")}`;
    sandbox = await Sandbox.create({ ...connection(env), metadata: { suite: tag } });
    await sandbox.files.write("/home/user/state.txt", "one\n");
    await dash.open(`sandboxes/${sandbox.sandboxId}`);
    await page.waitForSelector("#events-status:has-text('live')", { timeout: 15_000 });

    // What the page asked for, so that a failure shows whether a label was sent (a CI run once drew a checkpoint
    // without its label; the form is read when submitted).
    const posted: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().endsWith("/checkpoints")) posted.push(r.postData() ?? "(no body)");
    });
    await page.fill("#checkpoint-label", "first");
    await expect.poll(() => page.inputValue("#checkpoint-label")).toBe("first");
    await page.click("#checkpoint-take");
    const first = page.locator("#checkpoint-tree li", { hasText: "first" }).first();
    // Polled on the panel's text rather than waited for: a failure then shows what the panel said (an error, a
    // checkpoint without its label) and what was posted.
    const panelText = () => page.locator("#checkpoint-tree").innerText();
    const drawn = (label: string) =>
      expect.poll(panelText, { timeout: 30_000 }).toContain(label).catch((err: Error) => {
        throw new Error(`${err.message}\nposted: ${posted.join(" | ")}`, { cause: err });
      });
    await drawn("first");
    await first.waitFor({ timeout: 5_000 });
    await sandbox.files.write("/home/user/state.txt", "two\n");
    await sandbox.files.write("/home/user/later.txt", "later\n");
    await page.fill("#checkpoint-label", "second");
    await expect.poll(() => page.inputValue("#checkpoint-label")).toBe("second");
    await page.click("#checkpoint-take");
    // The second is drawn inside the first's item: a child under its parent.
    const second = first.locator("ul li", { hasText: "second" });
    await drawn("second");
    await second.waitFor({ timeout: 5_000 });
    expect(await page.locator("#checkpoint-tree li[data-checkpoint-id]").count()).toBe(2);
    await expect.poll(() => second.locator(".node.current").count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => page.locator("#sandbox-events li[data-kind='lifecycle.checkpoint_created']").count(), { timeout: 15_000 }).toBe(2);
    await dash.shot("checkpoint-tree");

    await first.locator(".node button.rollback").first().click();
    await expect.poll(async () => (await sandbox!.files.read("/home/user/state.txt").catch(() => "")).trim(), { timeout: 60_000 }).toBe("one");
    expect(await sandbox.files.exists("/home/user/later.txt")).toBe(false);
    await expect.poll(() => first.locator(":scope > .node.current").count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => page.locator("#sandbox-events li[data-kind='lifecycle.rolled_back']").count(), { timeout: 15_000 }).toBe(1);
    // The page's envd panels come back on the rolled-back sandbox.
    await page.waitForSelector("#terminal-status:has-text('connected')", { timeout: 30_000 });

    await first.locator(".node button.branch").first().click();
    const link = page.locator("#branches a").first();
    await link.waitFor({ timeout: 60_000 });
    const child = (await link.textContent())!.trim();
    branched.push(child);
    const childBox = await Sandbox.connect(child, connection(env));
    expect((await childBox.files.read("/home/user/state.txt")).trim()).toBe("one");
    await dash.shot("checkpoint-rolled-back");
    expect(dash.errors).toEqual([]);
  });
});
