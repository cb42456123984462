// The triggers page in real Chromium: a rule on a real sandbox's file events runs once per file written; its runs
// come back from GET /burrow/v1/triggers/{id}/runs (event, state, result) and are drawn on the page as pipelines,
// event → run → result, a passing run green and a failing one red with its exit code.
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BusClient } from "@burrow/sdk";
import { connection } from "../desktop/helpers.js";
import { keyedApi } from "../helpers/keyed-api.js";
import { openDashboard, type DashboardPage } from "./browser-page.js";

const env = inject("burrow");
const call = keyedApi(env.apiUrl, env.apiKey);
const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
let dash: DashboardPage;
let sandbox: Sandbox | undefined;
let triggerId: string | undefined;

beforeAll(async () => {
  dash = await openDashboard(env);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  if (triggerId) await client.triggers.delete(triggerId).catch(() => undefined);
  await sandbox?.kill().catch(() => undefined);
});

describe("dashboard triggers page", () => {
  it("draws a rule's runs as pipelines, coloured by outcome", { timeout: 180_000 }, async () => {
    sandbox = await Sandbox.create(connection(env));
    await sandbox.files.makeDir("/home/user/inbox");
    await client.watches.create(sandbox.sandboxId, "/home/user/inbox");
    const t = await client.triggers.create({
      on: { sandboxId: sandbox.sandboxId, category: "fs", type: "create", pathPrefix: "/home/user/inbox/" },
      in: "source",
      // A file whose name starts with "bad" fails its run (exit 3), on its only attempt.
      cmd: "case $(basename {{path}}) in bad*) echo refused >&2; exit 3;; *) wc -c < {{path}};; esac",
      maxAttempts: 1,
    });
    triggerId = t.id;
    await sandbox.files.write("/home/user/inbox/good.txt", "12345");
    await sandbox.files.write("/home/user/inbox/bad.txt", "x");

    const final = (r: { state: string }) => r.state === "succeeded" || r.state === "dead";
    await expect.poll(async () => ((await call("GET", `/burrow/v1/triggers/${t.id}/runs`)).json as { state: string }[]).filter(final).length, { timeout: 90_000, interval: 500 }).toBe(2);
    const runs = (await call("GET", `/burrow/v1/triggers/${t.id}/runs`)).json as { id: string; state: string; event: { type: string; path: string }; result: { exitCode: number; stdout: string } }[];
    const good = runs.find((r) => r.event.path === "/home/user/inbox/good.txt")!;
    const bad = runs.find((r) => r.event.path === "/home/user/inbox/bad.txt")!;
    expect(good).toMatchObject({ state: "succeeded", event: { type: "fs.create" }, result: { exitCode: 0 } });
    expect(good.result.stdout.trim()).toBe("5");
    expect(bad).toMatchObject({ state: "dead", result: { exitCode: 3 }, error: "exit code 3" });
    expect((await call("GET", "/burrow/v1/triggers/nosuch/runs")).status).toBe(404);
    // The failed run's task is a dead letter of the tasks queue, with the worker's error kept.
    let letter: { data: string; lastError: string | null } | undefined;
    for (let after = 0; !letter; ) {
      const page = (await call("GET", `/burrow/v1/queues/tasks/dead-letters?limit=500&after=${after}`)).json as { items: { data: string; lastError: string | null }[]; next: number | null };
      letter = page.items.find((l) => l.data.includes(bad.id));
      if (page.next === null) break;
      after = page.next;
    }
    expect(letter?.lastError).toBe("exit code 3");

    const { page } = dash;
    await dash.open("triggers");
    await page.locator(`#triggers tr[data-trigger-id="${t.id}"] button.pick`).click();
    expect(new URL(page.url()).searchParams.get("id")).toBe(t.id);
    const goodRow = page.locator(`#runs li.pipeline[data-run-id="${good.id}"]`);
    const badRow = page.locator(`#runs li.pipeline[data-run-id="${bad.id}"]`);
    await goodRow.waitFor({ timeout: 15_000 });
    expect(await goodRow.getAttribute("data-state")).toBe("succeeded");
    expect(await goodRow.locator(".stage").count()).toBe(3);
    expect(await goodRow.locator(".stage.event").textContent()).toContain("/home/user/inbox/good.txt");
    expect(await goodRow.locator(".stage.result.succeeded .exit").textContent()).toBe("exit 0");
    expect(await badRow.getAttribute("data-state")).toBe("dead");
    expect(await badRow.locator(".stage.result.dead .exit").textContent()).toBe("exit 3");
    expect(await badRow.locator(".stage.result").textContent()).toContain("refused");
    // State colours: the result stage's left border is green for a pass and red for a failure.
    const border = (row: typeof goodRow) => row.locator(".stage.result").evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { borderLeftColor: string } }).getComputedStyle(el).borderLeftColor);
    expect(await border(goodRow)).toBe("rgb(46, 125, 50)");
    expect(await border(badRow)).not.toBe(await border(goodRow));
    await dash.shot("triggers-pipeline");
    expect(dash.errors).toEqual([]);
  });

  it("fits a phone-sized screen", { timeout: 120_000 }, async () => {
    const phone = await openDashboard(env, { width: 390, height: 844 });
    try {
      await phone.open(`triggers?id=${encodeURIComponent(triggerId!)}`);
      await phone.page.locator("#runs li.pipeline").first().waitFor({ timeout: 15_000 });
      // Nothing wider than the screen: the stages wrap instead of scrolling the page sideways.
      expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await phone.shot("triggers-phone");
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});
