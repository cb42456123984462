// Dashboard benchmarks in headless Chromium (Debian's, through playwright-core) against a real in-process Burrow
// server with the dashboard mounted, each figure beside a baseline measured in the same run:
// - first contentful paint of /dashboard/ (the sign-in page) in a fresh browser context (nothing cached);
// - the sandboxes page signed in, filtered (?metadata=) to BENCH_DASHBOARD_SANDBOXES real idle sandboxes
//   (default 1000): the time from navigation until the list says it holds all of them, and the time a click on a
//   row's button then takes to be answered (the page's main thread is free again: interactive); their sum is
//   reported as time to interactive. Baseline: the same page filtered to 1 sandbox, runs alternating.
// 1,000 idle sandboxes take minutes to create and GiBs of memory: on a loaded machine set a smaller count.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { chromium } from "playwright-core";
import { createDashboardHandler } from "@burrow/dashboard";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { freeSubnet } from "./lib/host.mjs";
import { median, report } from "./lib/stats.mjs";

const COUNT = Number(process.env.BENCH_DASHBOARD_SANDBOXES ?? 1000);
const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS ?? 5);
const CREATE_BATCH = 10;

function launch() {
  return chromium.launch({
    executablePath: process.env.BENCH_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** First contentful paint of the sign-in page, ms after navigation start. */
async function firstPaint(browser, base) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    await page.goto(base);
    await page.waitForSelector("#api-key");
    return await page.evaluate(
      () =>
        new Promise((resolve) => {
          const found = () => performance.getEntriesByName("first-contentful-paint")[0]?.startTime;
          if (found() !== undefined) return resolve(found());
          new PerformanceObserver(() => found() !== undefined && resolve(found())).observe({ type: "paint", buffered: true });
        }),
    );
  } finally {
    await context.close();
  }
}

/** {listedMs, clickMs}: navigation → "N sandboxes" with rows drawn, then a click on a row's Timeout… → its editor. */
async function listed(browser, base, apiKey, tag, count) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    await context.addInitScript((key) => sessionStorage.setItem("burrow.apiKey", key), apiKey);
    const want = `${count} sandbox${count === 1 ? "" : "es"}`;
    await context.addInitScript((text) => {
      const marks = (window.__bench = {});
      new MutationObserver(() => {
        if (marks.listed === undefined && document.getElementById("sandbox-count")?.textContent === text && document.querySelector("tr[data-sandbox-id]")) marks.listed = performance.now();
        if (marks.clicked !== undefined && marks.answered === undefined && document.querySelector(".timeout-edit")) marks.answered = performance.now();
      }).observe(document, { subtree: true, childList: true, characterData: true });
      addEventListener("pointerdown", () => (marks.clicked ??= performance.now()), true);
    }, want);
    const page = await context.newPage();
    await page.goto(`${base}?${new URLSearchParams({ metadata: `bench=${tag}` })}`);
    await page.waitForFunction(() => window.__bench.listed !== undefined, undefined, { timeout: 120_000 });
    await page.locator("tr[data-sandbox-id] button.timeout").first().click();
    await page.waitForFunction(() => window.__bench.answered !== undefined, undefined, { timeout: 60_000 });
    const marks = await page.evaluate(() => window.__bench);
    return { listedMs: marks.listed, clickMs: marks.answered - marks.clicked };
  } finally {
    await context.close();
  }
}

async function createTagged(opts, tag, count) {
  const ids = [];
  for (let i = 0; i < count; i += CREATE_BATCH) {
    const batch = await Promise.all(Array.from({ length: Math.min(CREATE_BATCH, count - i) }, () => Sandbox.create("base", { ...opts, timeoutMs: 3_600_000, metadata: { bench: tag } })));
    ids.push(...batch.map((s) => s.sandboxId));
    if (count > 50 && (i / CREATE_BATCH) % 10 === 0) process.stderr.write(`[bench] dashboard: ${ids.length}/${count} sandboxes\n`);
  }
  return ids;
}

export async function runDashboardBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-dashboard-");
  const instance = `w${randomBytes(2).toString("hex")}`;
  process.stdout.write(`\n== dashboard (headless Chromium → Burrow, ${COUNT} sandboxes; BENCH_DASHBOARD_SANDBOXES) ==\n`);
  const burrow = await startBurrow({
    stateDir,
    instance,
    subnet: freeSubnet(),
    pool: { template: "base", size: 0 },
    mounts: [{ path: "/dashboard", public: true, handle: createDashboardHandler() }],
  });
  const browser = await launch();
  const ids = [];
  try {
    const base = `${burrow.url}/dashboard/`;
    ids.push(...(await createTagged(burrow.opts, "one", 1)));
    ids.push(...(await createTagged(burrow.opts, "many", COUNT)));
    // A warm-up of each, not counted (Chromium's first start, the server's first list).
    await firstPaint(browser, base);
    await listed(browser, base, burrow.opts.apiKey, "one", 1);
    const paints = [];
    const one = [];
    const many = [];
    for (let run = 0; run < RUNS; run++) {
      paints.push(await firstPaint(browser, base));
      one.push(await listed(browser, base, burrow.opts.apiKey, "one", 1));
      many.push(await listed(browser, base, burrow.opts.apiKey, "many", COUNT));
    }
    const tti = (r) => r.listedMs + r.clickMs;
    report("first contentful paint /dashboard/ p50", median(paints), "ms");
    report(`sandboxes page listed, ${COUNT} sandboxes p50`, median(many.map((r) => r.listedMs)), "ms", median(one.map((r) => r.listedMs)), "1 sandbox");
    report(`  first click answered, ${COUNT} sandboxes p50`, median(many.map((r) => r.clickMs)), "ms", median(one.map((r) => r.clickMs)), "1 sandbox");
    report(`  time to interactive, ${COUNT} sandboxes p50`, median(many.map(tti)), "ms", median(one.map(tti)), "1 sandbox");
  } finally {
    await browser.close();
    for (let i = 0; i < ids.length; i += 20) await Promise.all(ids.slice(i, i + 20).map((id) => Sandbox.kill(id, burrow.opts).catch(() => undefined)));
    await stopBurrow(burrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runDashboardBenchmarks();
