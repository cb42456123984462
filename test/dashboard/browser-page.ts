// One signed-in Chromium page on the dashboard for a suite: errors the page logs or throws and failed loads are
// collected (a suite asserts there are none), screenshots go under test-results/dashboard/.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { launchHostChromium } from "../desktop/helpers.js";
import type { BurrowTestEnv } from "../helpers/burrow-env.js";

export const ARTEFACTS = join(import.meta.dirname, "..", "..", "test-results", "dashboard");

export interface DashboardPage {
  browser: Browser;
  page: Page;
  /** What went wrong in the page so far: console errors, uncaught exceptions, answers of 400 and above. */
  errors: string[];
  base: string;
  shot(name: string): Promise<void>;
  /** Opens `path` under /dashboard/, signing in first when this page has not. */
  open(path: string): Promise<void>;
  close(): Promise<void>;
}

export async function openDashboard(env: BurrowTestEnv, viewport = { width: 1280, height: 900 }): Promise<DashboardPage> {
  mkdirSync(ARTEFACTS, { recursive: true });
  const browser = await launchHostChromium();
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("response", (response) => {
    if (response.status() >= 400) errors.push(`response: ${response.status()} ${response.request().method()} ${response.url()}`);
  });
  const base = `${env.apiUrl}/dashboard/`;
  let signedIn = false;
  return {
    browser,
    page,
    errors,
    base,
    shot: async (name) => void (await page.screenshot({ path: join(ARTEFACTS, `${name}.png`), fullPage: true })),
    async open(path) {
      if (!signedIn) {
        await page.goto(base);
        await page.fill("#api-key", env.apiKey);
        await page.click("#sign-in");
        await page.waitForSelector("header nav");
        signedIn = true;
      }
      await page.goto(`${base}${path}`);
      await page.waitForSelector("header nav");
    },
    close: () => browser.close(),
  };
}
