// Chromium in a sandbox driven from the host over its DevTools protocol (CDP) with playwright-core's
// connectOverCDP(), through Burrow's gateway: by host (`9222-<id>.<domain>`, sandbox.getHost(9222)) and by the
// E2b-Sandbox-Id / E2b-Sandbox-Port headers. The `browser` template runs it headless from the start; a desktop
// starts the same Chromium with CDP when asked (`chromium-cdp`).
import { request } from "node:http";
import type { Sandbox } from "e2b";
import { chromium, type Browser } from "playwright-core";
import puppeteer from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection, createBrowserSandbox, createDesktop, decodePng, eventually } from "../desktop/helpers.js";

const env = inject("burrow");
let sandbox: Sandbox;
let browser: Browser;

const FORM = `<title>Order</title>
<form action="/done.html" method="get">
  <input id="name" name="name">
  <select id="size" name="size"><option>small</option><option>large</option></select>
  <label><input id="gift" type="checkbox" name="gift" value="yes"> gift</label>
  <button id="send">Send</button>
</form>`;
const DONE = `<title>Done</title><body style="background:rgb(0,120,0)"><p id="result"></p>
<script>document.getElementById("result").textContent =
  [...new URLSearchParams(location.search)].map(([k, v]) => k + "=" + v).join(";");</script></body>`;

beforeAll(async () => {
  sandbox = await createBrowserSandbox(env);
  await sandbox.files.write("/home/user/site/form.html", FORM);
  await sandbox.files.write("/home/user/site/done.html", DONE);
  await sandbox.commands.run("python3 -m http.server 8000 --bind 127.0.0.1 --directory /home/user/site", { background: true, timeoutMs: 0 });
  browser = await chromium.connectOverCDP(`http://${sandbox.getHost(9222)}`);
}, 1_800_000);

afterAll(async () => {
  await browser?.close();
  await sandbox?.kill();
});

/** GET through the gateway with the given headers, also for upgrades (resolves with the status line's code). */
function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, env.sandboxUrl), { headers });
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: "" });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("browser template (playwright-core over CDP through the gateway)", () => {
  it("fills a form on a page served inside the sandbox and takes a screenshot", async () => {
    const context = browser.contexts()[0]!;
    const page = await context.newPage();
    await eventually(
      () => page.goto("http://localhost:8000/form.html").then((r) => (r?.ok() ? true : undefined), () => undefined),
      "the sandbox's web server",
    );
    await page.fill("#name", "Ada Lovelace");
    await page.selectOption("#size", "large");
    await page.check("#gift");
    await Promise.all([page.waitForURL(/done\.html/), page.click("#send")]);
    expect(await page.textContent("#result")).toBe("name=Ada Lovelace;size=large;gift=yes");

    const png = decodePng(await page.screenshot());
    // A browser connected over CDP keeps its own window size (no viewport emulation): the screenshot is the window.
    const [width, height] = (await page.evaluate("[innerWidth, innerHeight]")) as [number, number];
    expect([png.width, png.height]).toEqual([width, height]);
    expect(png.pixel(Math.floor(width / 2), height - 10)).toEqual([0, 120, 0]);
    expect(png.colors).toBeGreaterThan(1);
    await page.close();
  });

  it("connects with the E2b-Sandbox-Id and E2b-Sandbox-Port headers as well", async () => {
    const headers = { "E2b-Sandbox-Id": sandbox.sandboxId, "E2b-Sandbox-Port": "9222" };
    const byHeaders = await chromium.connectOverCDP(env.sandboxUrl, { headers });
    try {
      expect(byHeaders.version()).toBe(browser.version());
      const page = await byHeaders.contexts()[0]!.newPage();
      await page.goto("http://localhost:8000/form.html");
      expect(await page.title()).toBe("Order");
      await page.close();
    } finally {
      await byHeaders.close();
    }
  });

  it("puppeteer-core connects by browserURL through the gateway too", async () => {
    const remote = await puppeteer.connect({ browserURL: `http://${sandbox.getHost(9222)}` });
    try {
      expect(await remote.version()).toBe(`Chrome/${browser.version()}`);
      const page = await remote.newPage();
      await page.goto("http://localhost:8000/form.html");
      await page.type("#name", "Grace Hopper");
      expect(await page.$eval("#name", (input) => (input as unknown as { value: string }).value)).toBe("Grace Hopper");
      await page.close();
    } finally {
      await remote.disconnect();
    }
  });

  it("hands out WebSocket URLs on the address the client used", async () => {
    const host = sandbox.getHost(9222);
    const byHost = (await (await fetch(`http://${host}/json/version`)).json()) as { webSocketDebuggerUrl: string };
    expect(byHost.webSocketDebuggerUrl).toMatch(new RegExp(`^ws://${host.replace(/\./g, "\\.")}/devtools/browser/`));
    const headers = { "E2b-Sandbox-Id": sandbox.sandboxId, "E2b-Sandbox-Port": "9222" };
    const byHeaders = JSON.parse((await rawGet("/json/version", headers)).body) as { webSocketDebuggerUrl: string };
    expect(byHeaders.webSocketDebuggerUrl).toMatch(new RegExp(`^ws://${new URL(env.sandboxUrl).host}/devtools/browser/`));
  });

  it("refuses a DevTools WebSocket opened by a web page (an Origin header)", async () => {
    const version = JSON.parse(
      (await rawGet("/json/version", { "E2b-Sandbox-Id": sandbox.sandboxId, "E2b-Sandbox-Port": "9222" })).body,
    ) as { webSocketDebuggerUrl: string };
    const path = new URL(version.webSocketDebuggerUrl).pathname;
    const upgrade = {
      "E2b-Sandbox-Id": sandbox.sandboxId,
      "E2b-Sandbox-Port": "9222",
      Connection: "Upgrade",
      Upgrade: "websocket",
      "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    };
    expect((await rawGet(path, upgrade)).status).toBe(101);
    expect((await rawGet(path, { ...upgrade, Origin: "http://pages.example" })).status).toBe(403);
  });

  it("Chromium runs without its own sandbox because Burrow refuses new namespaces inside every sandbox", async () => {
    // The README's reason for --no-sandbox, checked: Chromium's sandbox needs namespaces, and cannot have them.
    const bare = await sandbox.commands
      .run("/usr/lib/chromium/chromium --headless --user-data-dir=/tmp/bare about:blank", { timeoutMs: 60_000 })
      .catch((error: { result?: { exitCode: number; stderr: string } }) => error.result);
    expect(bare?.exitCode).not.toBe(0);
    expect(bare?.stderr).toContain("No usable sandbox");
    expect((await sandbox.commands.run("unshare -U true 2>&1 || true")).stdout).toContain("Operation not permitted");
  });

  it("a runaway page is stopped by the sandbox's memory limit; the browser, the sandbox and its neighbours go on", async () => {
    const neighbour = await (await import("e2b")).Sandbox.create("base", connection(env));
    try {
      const page = await browser.contexts()[0]!.newPage();
      const crashed = new Promise<void>((resolve) => page.once("crash", () => resolve()));
      void page
        .evaluate(() => {
          const kept: Uint8Array[] = [];
          for (;;) kept.push(new Uint8Array(64 << 20).fill(1));
        })
        .catch(() => undefined);
      await crashed;
      // Only the page's renderer went: the browser opens pages, envd answers, the neighbour is untouched.
      const again = await browser.contexts()[0]!.newPage();
      await again.goto("http://localhost:8000/form.html");
      expect(await again.title()).toBe("Order");
      await again.close();
      expect((await sandbox.commands.run("echo alive")).stdout.trim()).toBe("alive");
      expect((await neighbour.commands.run("echo fine")).stdout.trim()).toBe("fine");
    } finally {
      await neighbour.kill();
    }
  }, 180_000);
});

describe("desktop Chromium with CDP", () => {
  it("chromium-cdp starts the desktop's Chromium with CDP: a page driven over CDP shows on the desktop", async () => {
    const desktop = await createDesktop(env);
    try {
      await desktop.commands.run("chromium-cdp --start-maximized about:blank", { background: true, timeoutMs: 0 });
      const remote = await eventually(
        () => chromium.connectOverCDP(`http://${desktop.getHost(9222)}`).catch(() => undefined),
        "CDP on the desktop",
        120,
      );
      try {
        const page = remote.contexts()[0]!.pages()[0] ?? (await remote.contexts()[0]!.newPage());
        await page.goto("data:text/html,<title>blue</title><body style='margin:0;background:rgb(0,0,200)'></body>");
        await eventually(async () => {
          const [r, g, b] = decodePng(await desktop.screenshot()).pixel(512, 600);
          return r < 30 && g < 30 && b > 170 ? true : undefined;
        }, "the page on the desktop's screen", 40);
      } finally {
        await remote.close();
      }
    } finally {
      await desktop.kill();
    }
    // The first desktop of a run builds its template (Debian packages): minutes on a busy machine.
  }, 600_000);
});
