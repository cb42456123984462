// Shared by the desktop and browser suites: the official SDKs against the global test server, the one-time builds
// of the `desktop` and `browser` templates (minutes: apt inside a build sandbox) that the first suite of a run pays
// for and the others reuse, PNG checks, and a real Chromium on the host (Debian's, driven by playwright-core).
import { Sandbox as DesktopSandbox } from "@e2b/desktop";
import { Sandbox } from "e2b";
import { chromium, type Browser } from "playwright-core";
import { PNG } from "pngjs";
import type { BurrowTestEnv } from "../helpers/burrow-env.js";

/**
 * SDK options for the test server. `domain` makes getHost() (and so stream.getUrl() and the CDP address) name
 * `<port>-<id>.burrow.localhost:<server port>`, which resolves to this machine (*.localhost) and which the gateway
 * routes by its Host; a server that sends a domain of its own overrides it.
 */
export function connection(env: BurrowTestEnv) {
  return { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl, domain: `burrow.localhost:${new URL(env.apiUrl).port}` };
}

function isConnectionDrop(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: string }).code;
    if (code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "UND_ERR_HEADERS_TIMEOUT") return true;
  }
  return false;
}

/**
 * Run a create that may be the first of the run, which waits for its template's build. No request timeout of the
 * SDK's own; the HTTP client still gives up on an answer that takes over 5 minutes (undici's headers timeout), and
 * a server may drop a silent connection. The build goes on regardless, and asking again waits for the same build.
 */
async function firstCreate<T>(create: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (error) {
      if (attempt >= 4 || !isConnectionDrop(error)) throw error;
    }
  }
}

/** The create options of @e2b/desktop these suites use (the SDK does not export its options type). */
export interface DesktopOpts {
  resolution?: [number, number];
  dpi?: number;
  envs?: Record<string, string>;
}

/** A desktop through the official @e2b/desktop SDK (template `desktop`, its default). */
export function createDesktop(env: BurrowTestEnv, opts: DesktopOpts = {}): Promise<DesktopSandbox> {
  return firstCreate(() => DesktopSandbox.create({ ...connection(env), requestTimeoutMs: 0, ...opts }));
}

/** A sandbox of the `browser` template through the official e2b SDK. */
export function createBrowserSandbox(env: BurrowTestEnv): Promise<Sandbox> {
  return firstCreate(() => Sandbox.create("browser", { ...connection(env), requestTimeoutMs: 0 }));
}

export interface DecodedPng {
  width: number;
  height: number;
  /** Distinct colours among every 7th pixel: a blank screen has one or two, a desktop hundreds. */
  colors: number;
  /** RGB of the pixel at (x, y). */
  pixel: (x: number, y: number) => [number, number, number];
}

export function decodePng(bytes: Uint8Array): DecodedPng {
  const png = PNG.sync.read(Buffer.from(bytes));
  const seen = new Set<number>();
  for (let i = 0; i < png.data.length; i += 4 * 7) seen.add((png.data[i]! << 16) | (png.data[i + 1]! << 8) | png.data[i + 2]!);
  return {
    width: png.width,
    height: png.height,
    colors: seen.size,
    pixel: (x, y) => {
      const i = (y * png.width + x) * 4;
      return [png.data[i]!, png.data[i + 1]!, png.data[i + 2]!];
    },
  };
}

/**
 * Debian's Chromium on the host, headless. Without the background-networking flags it tries to reach the
 * internet; tests only talk to the loopback.
 */
export function launchHostChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * The SDK's https:// URLs as the test server serves them: it listens on plain HTTP (TLS on the same port is not
 * part of the test server), so the same URL over http.
 */
export function overPlainHttp(url: string): string {
  return url.replace(/^https:/, "http:");
}

/** Poll `check` until it returns a value other than undefined (or throw after `attempts`). */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, attempts = 60, intervalMs = 250): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}
