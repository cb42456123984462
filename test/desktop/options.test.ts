// Desktops of other sizes, and desktops from the warm pool. The template starts the default desktop in every
// sandbox (before it is handed out when it comes from the pool); the SDK's own Xvfb and startxfce4 then either
// find exactly that desktop or replace it with the one asked for.
import type { Sandbox } from "@e2b/desktop";
import { describe, expect, inject, it } from "vitest";
import { createDesktop, decodePng, eventually } from "./helpers.js";

const env = inject("burrow");

/** How many processes of each name run in the sandbox. */
async function count(desktop: Sandbox, name: string): Promise<number> {
  return Number((await desktop.commands.run(`pgrep -c -x ${name} || true`)).stdout.trim());
}

/**
 * Whether the oldest process of that name started before `askedAt` (host ms since the epoch). Its age comes from
 * the kernel's boot clock (/proc/uptime minus its start time in /proc/<pid>/stat); the host's elapsed time is taken
 * after the answer arrives, so an age above it means the process was running before `askedAt`.
 */
async function startedBefore(desktop: Sandbox, name: string, askedAt: number): Promise<boolean> {
  const script =
    `pid=$(pgrep -o -x ${name}); ticks=$(cut -d')' -f2 /proc/$pid/stat | awk '{print $20}'); ` +
    `awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" '{printf "%d", ($1 - t / hz) * 1000}' /proc/uptime`;
  const ageMs = Number((await desktop.commands.run(script)).stdout.trim());
  return ageMs > Date.now() - askedAt;
}

describe("desktop options and the warm pool", () => {
  it("a resolution and DPI of its own replace the default desktop", async () => {
    const desktop = await createDesktop(env, { resolution: [1280, 720], dpi: 120 });
    try {
      expect(await desktop.getScreenSize()).toEqual({ width: 1280, height: 720 });
      // The SDK waits for the session's processes, not for their windows: the desktop is drawn moments later.
      const png = await eventually(async () => {
        const shot = decodePng(await desktop.screenshot());
        return shot.colors > 50 ? shot : undefined;
      }, "the new desktop on the screen");
      expect([png.width, png.height]).toEqual([1280, 720]);
      expect((await desktop.commands.run("xdpyinfo | grep resolution")).stdout).toContain("120x120 dots per inch");
      // One server and one session: the default one is gone, not running beside.
      expect(await count(desktop, "Xvfb")).toBe(1);
      expect(await count(desktop, "xfce4-session")).toBe(1);
      expect(await count(desktop, "xfwm4")).toBe(1);
      await desktop.moveMouse(1200, 700);
      expect(await desktop.getCursorPosition()).toEqual({ x: 1200, y: 700 });
    } finally {
      await desktop.kill();
    }
  });

  it("the default desktop is kept: one server, one session, the SDK's checks pass", async () => {
    const desktop = await createDesktop(env);
    try {
      expect(await desktop.getScreenSize()).toEqual({ width: 1024, height: 768 });
      expect(await count(desktop, "Xvfb")).toBe(1);
      expect(await count(desktop, "xfce4-session")).toBe(1);
      expect(await count(desktop, "xfdesktop")).toBe(1);
      // The SDK's env reaches its own commands (DISPLAY), as on E2B.
      expect((await desktop.commands.run("echo $DISPLAY")).stdout.trim()).toBe(":0");
    } finally {
      await desktop.kill();
    }
  });

  it("once desktops are in use, the warm pool hands one out with Xvfb and the window manager already running", async () => {
    // The test server runs a warm pool; the desktop pool fills (one sandbox) after the first desktop create. A
    // create that finds it ready gets a sandbox whose X server and window manager started before the create was
    // asked for. Creates made before it is ready start their own desktop (and do not use it up).
    let pooled: { desktop: Sandbox; askedAt: number } | undefined;
    for (let attempt = 0; attempt < 40 && !pooled; attempt++) {
      const askedAt = Date.now();
      const desktop = await createDesktop(env);
      if (await startedBefore(desktop, "Xvfb", askedAt)) pooled = { desktop, askedAt };
      else {
        await desktop.kill();
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
    expect(pooled, "no create got a desktop from the warm pool").toBeDefined();
    const { desktop, askedAt } = pooled!;
    try {
      expect(await startedBefore(desktop, "xfwm4", askedAt)).toBe(true);
      expect(await count(desktop, "Xvfb")).toBe(1);
      expect(await count(desktop, "xfce4-session")).toBe(1);
      const png = decodePng(await desktop.screenshot());
      expect([png.width, png.height]).toEqual([1024, 768]);
      expect(png.colors).toBeGreaterThan(50);
      await desktop.leftClick(200, 300);
      expect(await desktop.getCursorPosition()).toEqual({ x: 200, y: 300 });
    } finally {
      await desktop.kill();
    }
  }, 600_000);
});
