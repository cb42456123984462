// The web dashboard in real headless Chromium against the e2e server: sign in with the API key, a sandbox the
// official SDK creates appears in the live list, its page runs a command in a real terminal (envd's PTY through
// the gateway), a file uploaded from the browser is read back with the SDK and downloaded again, and killing it
// from the page makes the SDK report it gone. The page must log no console errors and throw nothing; a
// screenshot of each page is kept under test-results/dashboard/.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection, launchHostChromium } from "../desktop/helpers.js";

const env = inject("burrow");
const ARTEFACTS = join(import.meta.dirname, "..", "..", "test-results", "dashboard");
const base = `${env.apiUrl}/dashboard/`;

let browser: Browser;
let context: BrowserContext;
let page: Page;
let sandbox: Sandbox | undefined;
const pageErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTEFACTS, { recursive: true });
  browser = await launchHostChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => pageErrors.push(`pageerror: ${error.message}`));
  // Chromium's console names only the status of a failed load; the URL says which call it was.
  page.on("response", (response) => {
    if (response.status() >= 400) pageErrors.push(`response: ${response.status()} ${response.request().method()} ${response.url()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await sandbox?.kill().catch(() => undefined);
});

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTEFACTS, `${name}.png`), fullPage: true });
}

describe("dashboard files", () => {
  it("serves the built UI with content types and cache headers, index.html for client routes", async () => {
    const index = await fetch(base);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toMatch(/^text\/html/);
    expect(index.headers.get("cache-control")).toBe("no-cache");
    const html = await index.text();
    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const style = /href="(\/dashboard\/assets\/[^"]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();

    const js = await fetch(`${env.apiUrl}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect(js.headers.get("cache-control")).toContain("immutable");
    const css = await fetch(`${env.apiUrl}${style}`);
    expect(css.headers.get("content-type")).toMatch(/^text\/css/);

    // A client route (reload on a sandbox's page) gets the app, a missing bundle a real 404.
    const route = await fetch(`${base}sandboxes/abc123`);
    expect(route.status).toBe(200);
    expect(await route.text()).toBe(html);
    const missing = await fetch(`${base}assets/nope-123.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 404 });
    const bare = await fetch(`${env.apiUrl}/dashboard`, { redirect: "manual" });
    expect(bare.status).toBe(301);
    expect(bare.headers.get("location")).toBe("/dashboard/");
    const post = await fetch(base, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(await post.json()).toMatchObject({ code: 405 });
    // The REST API is still behind the key.
    expect((await fetch(`${env.apiUrl}/v2/sandboxes`)).status).toBe(401);
  });
});

describe("dashboard in Chromium", () => {
  it("signs in, shows a new sandbox live, runs a command in its terminal, uploads a file and kills it", async () => {
    await page.goto(base);
    await page.waitForSelector("#api-key");
    await shot("1-sign-in");
    await page.fill("#api-key", env.apiKey);
    await page.click("#sign-in");
    await page.waitForSelector("table");
    expect(await page.evaluate("sessionStorage.getItem(\"burrow.apiKey\")")).toBe(env.apiKey);

    // Created after the page is up: it has to arrive through the page's polling.
    const tag = `dash-${randomBytes(4).toString("hex")}`;
    sandbox = await Sandbox.create({ ...connection(env), metadata: { suite: tag } });
    const row = page.locator(`tr[data-sandbox-id="${sandbox.sandboxId}"]`);
    await row.waitFor({ timeout: 15_000 }).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; page: ${await page.locator("main").innerText()}; errors: ${pageErrors.join(" | ")}`);
    });
    expect(await row.getAttribute("data-state")).toBe("running");
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain(`suite=${tag}`);
    // The metadata filter keeps it and drops what does not match.
    await page.fill("#metadata-filter", `suite=${tag}`);
    await page.press("#metadata-filter", "Enter");
    await expect.poll(() => page.locator("tbody tr").count(), { timeout: 15_000 }).toBe(1);
    await shot("2-sandboxes");

    await row.locator("a.open").click();
    await page.waitForURL(`${base}sandboxes/${sandbox.sandboxId}`);
    await page.waitForSelector("#terminal-status:has-text('connected')", { timeout: 30_000 });
    await page.click("#terminal");
    await page.keyboard.type("echo hello-$RANDOM");
    await page.keyboard.press("Enter");
    const rows = page.locator("#terminal .xterm-rows");
    // The typed line shows `$RANDOM` literally; only a shell that ran it prints digits after the dash.
    await expect.poll(async () => /^hello-\d+\s*$/m.test((await rows.innerText()).replace(/\u00a0/g, " ")), { timeout: 20_000 }).toBe(true);

    // Upload from the browser into the directory shown (/home/user), read back with the SDK.
    const name = `upload-${tag}.txt`;
    const content = `uploaded from the dashboard ${tag}\n`;
    await page.setInputFiles("#file-upload", { name, mimeType: "text/plain", buffer: Buffer.from(content) });
    const entry = page.locator(`#file-entries li[data-path="/home/user/${name}"]`);
    await entry.waitFor({ timeout: 15_000 });
    expect(await sandbox.files.read(`/home/user/${name}`)).toBe(content);
    // View it, and download it again.
    await entry.locator("a").click();
    await expect.poll(() => page.locator("#file-view").textContent(), { timeout: 10_000 }).toBe(content);
    const [download] = await Promise.all([page.waitForEvent("download"), entry.locator("button.link").click()]);
    expect(download.suggestedFilename()).toBe(name);
    expect(readFileSync((await download.path())!, "utf8")).toBe(content);
    await expect.poll(() => page.locator("#sandbox-logs").textContent(), { timeout: 15_000 }).not.toBe("loading…");
    await shot("3-sandbox");

    await page.click("button.kill");
    await page.waitForURL(base);
    await expect.poll(() => sandbox!.isRunning(), { timeout: 20_000 }).toBe(false);
    await expect(Sandbox.getInfo(sandbox.sandboxId, connection(env))).rejects.toThrow(/not found/i);
    await expect.poll(() => page.locator(`tr[data-sandbox-id="${sandbox!.sandboxId}"]`).count(), { timeout: 15_000 }).toBe(0);
    sandbox = undefined;
    await shot("4-after-kill");

    expect(pageErrors).toEqual([]);
  });

  it("pauses, resumes, sets the timeout of and kills a sandbox from the list", async () => {
    // Signed in already when the first test ran in this page; not when this one runs alone.
    await page.goto(base);
    await page.waitForSelector("table, #api-key");
    if (await page.locator("#api-key").count()) {
      await page.fill("#api-key", env.apiKey);
      await page.click("#sign-in");
      await page.waitForSelector("table");
    }
    const tag = `dash-${randomBytes(4).toString("hex")}`;
    sandbox = await Sandbox.create({ ...connection(env), metadata: { suite: tag } });
    const id = sandbox.sandboxId;
    await page.fill("#metadata-filter", `suite=${tag}`);
    await page.press("#metadata-filter", "Enter");
    const row = page.locator(`tr[data-sandbox-id="${id}"]`);
    await row.waitFor({ timeout: 15_000 });

    const before = await Sandbox.getInfo(id, connection(env));
    await row.locator("button.timeout").click();
    await row.locator(".timeout-edit input").fill("3000");
    await row.locator(".timeout-edit button").click();
    await expect
      .poll(async () => (await Sandbox.getInfo(id, connection(env))).endAt.getTime() - Date.now(), { timeout: 15_000 })
      .toBeGreaterThan(2_000_000);
    expect((await Sandbox.getInfo(id, connection(env))).endAt.getTime()).toBeGreaterThan(before.endAt.getTime());

    await row.locator("button.pause").click();
    await expect
      .poll(() => row.getAttribute("data-state"), { timeout: 30_000 })
      .toBe("paused")
      .catch(async (error: unknown) => {
        throw new Error(`${String(error)}; page: ${await page.locator("main").innerText()}; errors: ${pageErrors.join(" | ")}`);
      });
    expect((await Sandbox.getInfo(id, connection(env))).state).toBe("paused");
    await shot("5-paused");

    await row.locator("button.resume").click();
    await expect.poll(() => row.getAttribute("data-state"), { timeout: 30_000 }).toBe("running");
    expect((await sandbox.commands.run("echo resumed")).stdout).toBe("resumed\n");

    await row.locator("button.kill").click();
    await expect.poll(() => row.count(), { timeout: 15_000 }).toBe(0);
    await expect(Sandbox.getInfo(id, connection(env))).rejects.toThrow(/not found/i);
    sandbox = undefined;

    expect(pageErrors).toEqual([]);
  });
});
