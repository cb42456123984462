// The dashboard follows lifecycle events live (GET /burrow/v1/lifecycle-events), in real Chromium against sandboxes
// the official SDK creates, pauses and kills: each change shows within 2 s although the list's safety-net poll runs
// every 20 s (checked: no list request in a quiet 5 s), one sandbox's page marks it killed when the SDK kills it,
// a stream that the server ends and then refuses is opened again and delivers events, and a team's key hears its own
// team's sandboxes only.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import type { Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connection } from "../desktop/helpers.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const tag = `live-${randomBytes(4).toString("hex")}`;
const LIVE_MS = 2_000;
let dash: DashboardPage;
const made: string[] = [];
const teams: string[] = [];

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close().catch(() => undefined);
  await Promise.all(made.map((id) => Sandbox.kill(id, connection(env)).catch(() => undefined)));
  for (const id of teams) await keyedApi(env.apiUrl, env.apiKey)("DELETE", `/burrow/v1/teams/${id}?force=true`).catch(() => undefined);
});

async function create(): Promise<string> {
  const sandbox = await Sandbox.create({ ...connection(env), metadata: { suite: tag } });
  made.push(sandbox.sandboxId);
  return sandbox.sandboxId;
}

/**
 * Errors since `from`, less what the envd panels log when their sandbox dies under them (streams cut, a shell's kill
 * answered 502 by the gateway): the page cannot prevent those for a kill that it did not make. Chromium's console
 * line for a failed load has no address, so those are left out here and `failed` checks where they went.
 */
const errorsSince = (from: number) =>
  dash.errors.slice(from).filter((e) => !/Failed to load resource: net::ERR_|\/process\.Process\/|\/filesystem\.Filesystem\/|status of 502/.test(e));

const rowOf = (id: string) => dash.page.locator(`tr[data-sandbox-id="${id}"]`);
const live = () => dash.page.locator("#live-status").getAttribute("class");

describe("dashboard live updates", () => {
  it("shows a create, a pause and a kill by the SDK within 2 s, with the list poll at 20 s", { timeout: 120_000 }, async () => {
    const { page } = dash;
    await dash.open("");
    await expect.poll(live, { timeout: 15_000 }).toBe("live live");
    // The old page polled the list every 2 s: a quiet 5 s without one shows that only events refresh it now.
    const lists: Request[] = [];
    const onRequest = (r: Request) => void (new URL(r.url()).pathname === "/v2/sandboxes" && lists.push(r));
    page.on("request", onRequest);
    await page.waitForTimeout(5_000);
    expect(lists).toHaveLength(0);
    page.off("request", onRequest);

    const id = await create();
    await expect.poll(() => rowOf(id).count(), { timeout: LIVE_MS, interval: 100 }).toBe(1);
    expect(await Sandbox.betaPause(id, connection(env))).toBe(true);
    await expect.poll(() => rowOf(id).getAttribute("data-state"), { timeout: LIVE_MS, interval: 100 }).toBe("paused");
    expect(await Sandbox.kill(id, connection(env))).toBe(true);
    await expect.poll(() => rowOf(id).count(), { timeout: LIVE_MS, interval: 100 }).toBe(0);
    expect(dash.errors).toEqual([]);
  });

  it("marks one sandbox's page killed when the SDK kills it", { timeout: 120_000 }, async () => {
    const id = await create();
    const from = dash.errors.length;
    const failed: string[] = [];
    // Requests the navigation itself cancels (the list page's stream and poll) are ERR_ABORTED: not failures.
    const onFailed = (r: Request) => void (r.failure()?.errorText !== "net::ERR_ABORTED" && failed.push(new URL(r.url()).pathname));
    dash.page.on("requestfailed", onFailed);
    await dash.open(`sandboxes/${id}`);
    await dash.page.waitForSelector("#sandbox-id");
    await expect.poll(() => dash.page.locator("header nav").count()).toBe(1);
    // The detail has loaded once (its state line) before the kill.
    await dash.page.locator("#sandbox-summary").waitFor({ timeout: 15_000 });
    expect(await Sandbox.kill(id, connection(env))).toBe(true);
    await expect.poll(() => dash.page.locator("#sandbox-ended").textContent(), { timeout: LIVE_MS, interval: 100 }).toBe("This sandbox was killed.");
    await dash.page.waitForTimeout(500);
    dash.page.off("requestfailed", onFailed);
    // A poll of this sandbox's details or checkpoints already on its way when the SDK killed it is answered 404: the
    // page cannot prevent that for a kill it did not make (it stops polling once it hears of the kill).
    const answeredGone = (e: string) => new RegExp(`^response: 404 GET \\S+/sandboxes/${id}(/checkpoints)?$`).test(e) || /status of 404 \(Not Found\)/.test(e);
    expect(errorsSince(from).filter((e) => !answeredGone(e))).toEqual([]);
    // Only envd's calls failed (its Connect-RPC services through the gateway), none of the API's.
    expect(failed.filter((path) => !/^\/(process\.Process|filesystem\.Filesystem)\//.test(path))).toEqual([]);
  });

  it("opens the stream again after the server ends it and after a refused attempt", { timeout: 120_000 }, async () => {
    const { page } = dash;
    const from = dash.errors.length;
    let attempts = 0;
    await page.route("**/burrow/v1/lifecycle-events", async (route) => {
      attempts++;
      // First the server ends the stream at once, then the connection fails, then the real stream.
      if (attempts === 1) await route.fulfill({ status: 200, contentType: "text/event-stream", body: ": subscribed\n\n" });
      else if (attempts === 2) await route.abort("connectionreset");
      else await route.fallback();
    });
    try {
      await dash.open("");
      await expect.poll(() => page.locator("#live-status").getAttribute("data-reconnects"), { timeout: 15_000 }).toBe("1");
      expect(await live()).toBe("live live");
      expect(attempts).toBe(3);
      const id = await create();
      await expect.poll(() => rowOf(id).count(), { timeout: LIVE_MS, interval: 100 }).toBe(1);
      // The refused attempt is the only error: Chromium logs the reset connection.
      expect(dash.errors.slice(from).filter((e) => !/ERR_CONNECTION_RESET|ERR_FAILED/.test(e))).toEqual([]);
    } finally {
      await page.unroute("**/burrow/v1/lifecycle-events");
    }
  });

  it("passes a team's key its own team's sandbox events only", { timeout: 120_000 }, async () => {
    const newTeam = async (label: string) => {
      const res = await keyedApi(env.apiUrl, env.apiKey)("POST", "/burrow/v1/teams", { name: `${tag}-${label}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      teams.push(res.json.teamID as string);
      return res.json.adminKey.key as string;
    };
    const keyA = await newTeam("a");
    const keyB = await newTeam("b");
    const controller = new AbortController();
    const res = await fetch(`${env.apiUrl}/burrow/v1/lifecycle-events`, { headers: { "x-api-key": keyA }, signal: controller.signal });
    expect(res.status).toBe(200);
    const seen: string[] = [];
    const reading = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body!) {
          for (const line of decoder.decode(chunk as Uint8Array, { stream: true }).split("\n")) {
            if (line.startsWith("data: ")) {
              const e = JSON.parse(line.slice(6)) as { type: string; sandboxID: string };
              seen.push(`${e.type} ${e.sandboxID}`);
            }
          }
        }
      } catch {
        // aborted below
      }
    })();
    try {
      const other = await Sandbox.create("base", { ...sdkOptions(env.apiUrl, env.sandboxUrl, keyB), timeoutMs: 60_000 });
      const own = await Sandbox.create("base", { ...sdkOptions(env.apiUrl, env.sandboxUrl, keyA), timeoutMs: 60_000 });
      await other.kill();
      await own.kill();
      await expect.poll(() => seen, { timeout: 5_000 }).toEqual([`created ${own.sandboxId}`, `killed ${own.sandboxId}`]);
    } finally {
      controller.abort();
      await reading;
    }
  });
});
