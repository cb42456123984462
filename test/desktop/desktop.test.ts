// The official @e2b/desktop SDK, unchanged, against Burrow's `desktop` template: screenshots, the mouse, the
// keyboard into a text editor, window queries, open() and launch().
import type { Sandbox } from "@e2b/desktop";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDesktop, decodePng, eventually } from "./helpers.js";

const env = inject("burrow");
let desktop: Sandbox;

beforeAll(async () => {
  desktop = await createDesktop(env);
}, 1_800_000);

afterAll(async () => {
  await desktop?.kill();
});

/** Visible windows of an application class; none yet is an empty list (xdotool exits 1 then). */
async function windowsOf(application: string): Promise<string[]> {
  try {
    return (await desktop.getApplicationWindows(application)).filter((id) => id !== "");
  } catch {
    return [];
  }
}

describe("desktop (official @e2b/desktop)", () => {
  it("takes a PNG screenshot of the whole screen, not a blank one", async () => {
    const png = decodePng(await desktop.screenshot());
    expect([png.width, png.height]).toEqual([1024, 768]);
    // The xfce desktop: wallpaper, panel, icons and text.
    expect(png.colors).toBeGreaterThan(50);
    expect(await desktop.getScreenSize()).toEqual({ width: 1024, height: 768 });
  });

  it("moves the mouse, clicks, drags and scrolls, and reports where the cursor is", async () => {
    await desktop.moveMouse(100, 200);
    expect(await desktop.getCursorPosition()).toEqual({ x: 100, y: 200 });
    await desktop.leftClick(300, 400);
    expect(await desktop.getCursorPosition()).toEqual({ x: 300, y: 400 });
    await desktop.doubleClick(320, 410);
    expect(await desktop.getCursorPosition()).toEqual({ x: 320, y: 410 });
    await desktop.middleClick(330, 420);
    await desktop.scroll("down", 3);
    await desktop.scroll("up", 1);
    await desktop.drag([400, 300], [640, 500]);
    expect(await desktop.getCursorPosition()).toEqual({ x: 640, y: 500 });
    await desktop.mousePress("left");
    await desktop.mouseRelease("left");
    // A right click opens the desktop's menu; Escape closes it again.
    await desktop.rightClick(700, 300);
    await desktop.press("escape");
    expect(await desktop.getCursorPosition()).toEqual({ x: 700, y: 300 });
  });

  it("types into a text editor, presses keys, and the saved file holds the text", async () => {
    const path = "/home/user/notes.txt";
    await desktop.launch("org.xfce.mousepad", path);
    const [window] = await eventually(async () => {
      const found = await windowsOf("mousepad");
      return found.length > 0 ? found : undefined;
    }, "the mousepad window", 120);
    await eventually(async () => ((await desktop.getCurrentWindowId()) === window ? true : undefined), "mousepad to have the focus");
    expect(await desktop.getWindowTitle(window!)).toContain("notes.txt");

    await desktop.write("Hello from Burrow!!");
    await desktop.press("backspace");
    await desktop.press("enter");
    await desktop.write(`second line: 1+1=2, 'single' "double" $HOME \\ ü`);
    await desktop.press(["ctrl", "s"]);
    const text = await eventually(async () => {
      const saved = await desktop.files.read(path).catch(() => undefined);
      return saved?.startsWith("Hello") && saved.includes("ü") ? saved : undefined;
    }, "the saved file");
    expect(text.trimEnd()).toBe(`Hello from Burrow!\nsecond line: 1+1=2, 'single' "double" $HOME \\ ü`);
    // Saved: the title loses its modified mark.
    expect(await desktop.getWindowTitle(window!)).not.toMatch(/^\*/);
    await desktop.press(["ctrl", "q"]);
  });

  it("open() shows a page in the desktop's Chromium", async () => {
    const page = "/home/user/page.html";
    await desktop.files.write(page, "<title>Burrow page</title><body style='margin:0;background:rgb(200,0,0)'></body>");
    await desktop.open(page);
    const [window] = await eventually(async () => {
      const found = await windowsOf("chromium");
      return found.length > 0 ? found : undefined;
    }, "a Chromium window", 160);
    await eventually(async () => ((await desktop.getWindowTitle(window!)).includes("Burrow page") ? true : undefined), "the page's title");
    // The page fills most of the window: the middle of the screen is its red.
    const shot = await eventually(async () => {
      const png = decodePng(await desktop.screenshot());
      const [r, g, b] = png.pixel(512, 500);
      return r > 180 && g < 40 && b < 40 ? png : undefined;
    }, "the red page on screen", 40);
    expect(shot.width).toBe(1024);
    await desktop.commands.run("pkill -x chromium || true");
  });

  it("launch() starts Firefox ESR with a page", async () => {
    const page = "/home/user/firefox.html";
    await desktop.files.write(page, "<title>Burrow in Firefox</title><body>hello</body>");
    await desktop.launch("firefox-esr", page);
    const [window] = await eventually(async () => {
      const found = await windowsOf("firefox-esr");
      return found.length > 0 ? found : undefined;
    }, "a Firefox window", 240);
    await eventually(
      async () => ((await desktop.getWindowTitle(window!)).includes("Burrow in Firefox") ? true : undefined),
      "the page's title in Firefox",
      120,
    );
    await desktop.commands.run("pkill -x firefox-esr || true");
  });
});
