// The sandboxes list's create, fork and snapshot in real Chromium, checked with the official SDK: the "new sandbox"
// form creates one with the template, timeout and metadata typed in; the metadata filter narrows the list to it;
// Fork starts a second sandbox from its files; Snapshot makes a template a sandbox can be created from.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const tag = `actions-${randomBytes(4).toString("hex")}`;
let dash: DashboardPage;
const snapshots: string[] = [];

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close().catch(() => undefined);
  const left = await Sandbox.list({ ...connection(env), query: { metadata: { suite: tag } } }).nextItems().catch(() => []);
  await Promise.all(left.map((s) => Sandbox.kill(s.sandboxId, connection(env)).catch(() => undefined)));
  for (const id of snapshots) await fetch(`${env.apiUrl}/templates/${id}`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
});

async function tagged(): Promise<string[]> {
  const items = await Sandbox.list({ ...connection(env), query: { metadata: { suite: tag } } }).nextItems();
  return items.map((s) => s.sandboxId).sort();
}

describe("dashboard sandbox actions", () => {
  it("creates from the form, filters by metadata, forks and snapshots from the list", { timeout: 180_000 }, async () => {
    const { page } = dash;
    await dash.open("");
    // Another sandbox that the filter has to hide.
    const other = await Sandbox.create({ ...connection(env), metadata: { suite: `${tag}-other` } });
    let forkId: string | undefined;
    let fromSnapshot: Sandbox | undefined;
    try {
      await page.click("#new-sandbox-open");
      await page.fill("#new-sandbox input[name=template]", "base");
      await page.fill("#new-sandbox input[name=timeout]", "1200");
      await page.fill("#new-sandbox input[name=metadata]", `suite=${tag}, role=created`);
      await page.click("#new-sandbox button[type=submit]");
      await expect.poll(() => page.locator("#notice").textContent(), { timeout: 30_000 }).toMatch(/^created /);
      const [created] = await tagged();
      expect(created).toBeDefined();
      const info = await Sandbox.getInfo(created!, connection(env));
      expect(info.metadata).toEqual({ suite: tag, role: "created" });
      expect(info.endAt.getTime() - Date.now()).toBeGreaterThan(1_000_000);

      await page.fill("#metadata-filter", `suite=${tag}`);
      await page.press("#metadata-filter", "Enter");
      await expect.poll(() => page.locator("tbody tr[data-sandbox-id]").count(), { timeout: 15_000 }).toBe(1);
      expect(await page.locator(`tr[data-sandbox-id="${other.sandboxId}"]`).count()).toBe(0);
      const row = page.locator(`tr[data-sandbox-id="${created}"]`);
      await row.waitFor();

      await row.locator("button.fork").click();
      await expect.poll(() => page.locator("#notice").textContent(), { timeout: 60_000 }).toMatch(/^forked /);
      forkId = /into (\S+)/.exec((await page.locator("#notice").textContent())!)?.[1];
      expect(forkId).toBeDefined();
      expect(forkId).not.toBe(created);
      expect((await Sandbox.getInfo(forkId!, connection(env))).state).toBe("running");

      await row.locator("button.snapshot").click();
      await expect.poll(() => page.locator("#notice").textContent(), { timeout: 60_000 }).toMatch(/^snapshot of /);
      const snapshotId = /: (\S+) \(/.exec((await page.locator("#notice").textContent())!)?.[1];
      expect(snapshotId).toBeDefined();
      snapshots.push(snapshotId!);
      const listed = (await (await fetch(`${env.apiUrl}/snapshots?sandboxID=${created}`, { headers: { "x-api-key": env.apiKey } })).json()) as { snapshotID: string }[];
      expect(listed.map((s) => s.snapshotID)).toContain(snapshotId);
      fromSnapshot = await Sandbox.create(snapshotId!, { ...connection(env), metadata: { suite: tag } });
      expect((await fromSnapshot.commands.run("echo ok")).stdout).toBe("ok\n");
      await dash.shot("list-actions");
      expect(dash.errors).toEqual([]);
    } finally {
      // Killed by the SDK only once the page is closed (afterAll, with the rest): a row the page is polling
      // metrics for would answer 404 when killed under it.
      await dash.close();
      await Promise.all([other.kill(), ...(forkId ? [Sandbox.kill(forkId, connection(env))] : []), fromSnapshot?.kill()]);
    }
  });
});
