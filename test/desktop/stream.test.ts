// The desktop stream of the official @e2b/desktop SDK (x11vnc and noVNC in the sandbox), loaded in a real
// browser — Debian's Chromium on the host — through Burrow's gateway: noVNC's page over HTTP and its VNC
// connection over a WebSocket, both on the `6080-<id>` host of stream.getUrl().
import type { Sandbox } from "@e2b/desktop";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDesktop, decodePng, eventually, launchHostChromium, overPlainHttp } from "./helpers.js";

const env = inject("burrow");
let desktop: Sandbox;
let browser: Browser;

beforeAll(async () => {
  desktop = await createDesktop(env);
  browser = await launchHostChromium();
}, 1_800_000);

afterAll(async () => {
  await browser?.close();
  await desktop?.kill();
});

/** noVNC's status line. */
async function status(page: Page): Promise<string> {
  return (await page.locator("#noVNC_status").textContent()) ?? "";
}

/** Open a stream URL and wait until noVNC says it is connected. */
async function openConnected(url: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(overPlainHttp(url));
  let last = "";
  // Up to a minute: on a heavily loaded host the sandbox's websockify and x11vnc can take that long to answer.
  await eventually(async () => ((last = await status(page)).includes("Connected") ? true : undefined), "noVNC to connect", 240).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)} (noVNC's status: "${last}")`);
  });
  return page;
}

/** noVNC's canvas as drawn in the page (scaled), and the size of the screen it shows. */
async function canvas(page: Page): Promise<{ width: number; height: number; colors: number }> {
  const element = page.locator("#noVNC_container canvas");
  const shown = decodePng(await element.screenshot());
  return { width: Number(await element.getAttribute("width")), height: Number(await element.getAttribute("height")), colors: shown.colors };
}

/** Click the canvas where the sandbox's (x, y) is shown; noVNC scales the 1024x768 screen into the page. */
async function clickScreen(page: Page, x: number, y: number): Promise<void> {
  const box = await page.locator("#noVNC_container canvas").boundingBox();
  if (!box) throw new Error("noVNC has no canvas");
  await page.mouse.click(box.x + ((x + 0.5) * box.width) / 1024, box.y + ((y + 0.5) * box.height) / 768);
}

describe("desktop stream (noVNC through the gateway)", () => {
  it("shows the desktop in a browser and passes the mouse through", { timeout: 150_000 }, async () => {
    await desktop.stream.start();
    await expect(desktop.stream.start()).rejects.toThrow("Stream is already running");
    const url = desktop.stream.getUrl();
    expect(url).toMatch(new RegExp(`^https://6080-${desktop.sandboxId}\\.`));
    expect(new URL(url).pathname).toBe("/vnc.html");

    const page = await openConnected(url);
    const drawn = await eventually(async () => {
      const seen = await canvas(page);
      return seen.colors > 50 ? seen : undefined;
    }, "the desktop on noVNC's canvas");
    expect([drawn.width, drawn.height]).toEqual([1024, 768]);

    await desktop.moveMouse(5, 5);
    await clickScreen(page, 600, 350);
    const moved = await eventually(async () => {
      const at = await desktop.getCursorPosition();
      return at.x !== 5 ? at : undefined;
    }, "the click to reach the sandbox");
    expect(Math.abs(moved.x - 600)).toBeLessThanOrEqual(2);
    expect(Math.abs(moved.y - 350)).toBeLessThanOrEqual(2);
    await page.close();
  });

  it("a view-only stream shows the desktop but passes no input", { timeout: 150_000 }, async () => {
    const page = await openConnected(desktop.stream.getUrl({ viewOnly: true }));
    expect(new URL(page.url()).searchParams.get("view_only")).toBe("true");
    await eventually(async () => ((await canvas(page)).colors > 50 ? true : undefined), "the desktop on noVNC's canvas");
    await desktop.moveMouse(5, 5);
    await clickScreen(page, 600, 350);
    // A click that got through arrives within moments (the test above); give it the same chance, then look.
    await page.waitForTimeout(1500);
    expect(await desktop.getCursorPosition()).toEqual({ x: 5, y: 5 });
    await page.close();
  });

  it("stop() ends the stream: the URL no longer reaches a server", async () => {
    const url = overPlainHttp(desktop.stream.getUrl());
    expect((await fetch(url)).status).toBe(200);
    await desktop.stream.stop();
    expect((await desktop.commands.run("pgrep -x x11vnc || true")).stdout.trim()).toBe("");
    const after = await eventually(async () => {
      const response = await fetch(url);
      return response.status === 200 ? undefined : response;
    }, "noVNC to stop");
    expect(after.status).toBe(502);
    expect(await after.json()).toMatchObject({ code: 502, message: "The sandbox is running but port is not open", port: 6080 });
  });

  it("with requireAuth the stream needs its key", async () => {
    await desktop.stream.start({ requireAuth: true });
    const key = desktop.stream.getAuthKey();
    expect(key).toMatch(/^[A-Za-z0-9]{16}$/);

    const locked = await browser.newPage();
    await locked.goto(overPlainHttp(desktop.stream.getUrl()));
    // noVNC asks for the password instead of showing the desktop.
    await locked.locator("#noVNC_credentials_dlg.noVNC_open").waitFor({ timeout: 30_000 });
    expect(await status(locked)).not.toContain("Connected");

    const wrong = await browser.newPage();
    await wrong.goto(overPlainHttp(desktop.stream.getUrl({ authKey: "x".repeat(16) })));
    await eventually(async () => ((await status(wrong)).toLowerCase().includes("fail") ? true : undefined), "the wrong key to be refused", 120);

    const page = await openConnected(desktop.stream.getUrl({ authKey: key }));
    await eventually(async () => ((await canvas(page)).colors > 50 ? true : undefined), "the desktop on noVNC's canvas");
    await Promise.all([locked.close(), wrong.close(), page.close()]);
    await desktop.stream.stop();
  });
});
