// A sandbox's file browser is live: with the page open on a directory, a file the official SDK writes into it and
// one it removes show in the listing without anyone pressing Refresh (the page watches the directory through envd's
// WatchDir stream); going into a subdirectory watches that one instead.
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

describe("dashboard file browser", () => {
  it("shows files the sandbox writes and removes as it happens", { timeout: 120_000 }, async () => {
    const { page } = dash;
    sandbox = await Sandbox.create(connection(env));
    await dash.open(`sandboxes/${sandbox.sandboxId}`);
    await expect.poll(() => page.locator("#files-live").getAttribute("data-live"), { timeout: 15_000 }).toBe("true");

    const name = `live-${randomBytes(4).toString("hex")}.txt`;
    const entry = page.locator(`#file-entries li[data-path="/home/user/${name}"]`);
    await sandbox.files.write(`/home/user/${name}`, "written while the page looks");
    await entry.waitFor({ timeout: 5_000 });
    await sandbox.files.remove(`/home/user/${name}`);
    await expect.poll(() => entry.count(), { timeout: 5_000 }).toBe(0);

    // Into a subdirectory: its own watch.
    await sandbox.files.makeDir("/home/user/sub");
    const sub = page.locator('#file-entries li[data-path="/home/user/sub"] a');
    await sub.waitFor({ timeout: 5_000 });
    await sub.click();
    await expect.poll(() => page.locator("#files-dir").textContent(), { timeout: 5_000 }).toBe("/home/user/sub");
    await expect.poll(() => page.locator("#files-live").getAttribute("data-live"), { timeout: 15_000 }).toBe("true");
    await sandbox.files.write("/home/user/sub/inner.txt", "x");
    await page.locator('#file-entries li[data-path="/home/user/sub/inner.txt"]').waitFor({ timeout: 5_000 });
    await dash.shot("files-live");
    expect(dash.errors).toEqual([]);
  });
});
