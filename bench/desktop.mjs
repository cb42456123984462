// Desktop (computer use) benchmarks through the official @e2b/desktop SDK against a real in-process Burrow server,
// each figure beside a baseline measured in the same run:
// - create → first screenshot, cold (no pool) and from the warm pool (the desktop already running), each beside a
//   create of the base template the same way;
// - screenshot round trip p50, beside `scrot` run directly inside the sandbox (no envd, gateway or file read);
// - click → screenshot round trip p50, beside `xdotool click` + `scrot` run directly inside the sandbox;
// - memory of an idle desktop sandbox (its cgroup, less page cache), beside an idle base sandbox.
// The first create builds the desktop template (minutes; its time is printed, not part of any figure).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Sandbox } from "@e2b/desktop";
import { Sandbox as BaseSandbox } from "e2b";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { median, report, sample, timeMs } from "./lib/stats.mjs";
import { freeSubnet } from "./lib/host.mjs";

const CREATE_RUNS = Number(process.env.BENCH_DESKTOP_CREATE_RUNS ?? 5);
const SHOT_RUNS = Number(process.env.BENCH_DESKTOP_SHOT_RUNS ?? 30);
/** How long a sandbox sits before its memory is read. */
const IDLE_MS = Number(process.env.BENCH_DESKTOP_IDLE_MS ?? 15_000);

/** Time create + first screenshot (or a first command for the base template), then kill. */
async function createToFirstScreenshot(opts) {
  let desktop;
  const ms = await timeMs(async () => {
    desktop = await Sandbox.create(opts);
    await desktop.screenshot();
  });
  await desktop.kill();
  return ms;
}

async function createBase(opts) {
  let sandbox;
  const ms = await timeMs(async () => {
    sandbox = await BaseSandbox.create("base", opts);
    await sandbox.commands.run("true");
  });
  await sandbox.kill();
  return ms;
}

/** Median ms of `command` run `runs` times directly inside the sandbox (one shell, no envd round trips). */
async function insideMs(sandbox, command, runs) {
  const script =
    `s=$(date +%s%N); i=0; while [ $i -lt ${runs} ]; do ${command}; i=$((i + 1)); done; ` +
    `echo $(( ($(date +%s%N) - s) / ${runs} ))`;
  const result = await sandbox.commands.run(script, { timeoutMs: 300_000 });
  return Number(result.stdout.trim()) / 1e6;
}

/** Anonymous memory (cgroup usage less page cache) of a sandbox once it has sat idle. */
async function idleMemoryMiB(sandbox) {
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  for (let i = 0; i < 40; i++) {
    const metrics = await sandbox.getMetrics();
    const last = metrics.at(-1);
    if (last) return (last.memUsed - last.memCache) / 2 ** 20;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`no metrics for ${sandbox.sandboxId}`);
}

export async function runDesktopBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-desktop-");
  const instance = `d${randomBytes(2).toString("hex")}`;
  // One subnet for both starts: the second reuses the first's state directory.
  const subnet = freeSubnet();
  process.stdout.write("\n== desktop (official @e2b/desktop SDK → Burrow) ==\n");
  try {
    // Cold: no pool at all.
    let burrow = await startBurrow({ stateDir, instance, subnet, pool: { template: "base", size: 0 } });
    try {
      process.stderr.write("[bench] building the desktop template (first use; minutes)\n");
      const build = await timeMs(async () => {
        // The HTTP client gives up on an answer slower than 5 minutes (and a server may drop a silent connection);
        // the build goes on, so ask again.
        for (let attempt = 1; ; attempt++) {
          try {
            await (await Sandbox.create({ ...burrow.opts, requestTimeoutMs: 0 })).kill();
            break;
          } catch (error) {
            if (attempt >= 4 || !["UND_ERR_SOCKET", "UND_ERR_HEADERS_TIMEOUT"].includes(error?.cause?.code)) throw error;
          }
        }
      });
      process.stdout.write(`desktop template build (first use, not a figure)  ${(build / 1000).toFixed(0)} s\n`);
      const baseCold = [];
      const desktopCold = [];
      for (let i = 0; i < CREATE_RUNS; i++) {
        baseCold.push(await createBase(burrow.opts));
        desktopCold.push(await createToFirstScreenshot(burrow.opts));
      }
      report("desktop create → first screenshot, cold, p50", median(desktopCold), "ms", median(baseCold), "create base + run, cold");

      const desktop = await Sandbox.create(burrow.opts);
      const base = await BaseSandbox.create("base", burrow.opts);
      try {
        await desktop.screenshot();
        const scrot = await insideMs(desktop, "scrot -o --pointer /tmp/direct.png", SHOT_RUNS);
        const shots = await sample(SHOT_RUNS, () => desktop.screenshot());
        report("screenshot round trip, p50", median(shots), "ms", scrot, "scrot inside the sandbox");
        const clickDirect = await insideMs(desktop, "xdotool mousemove 300 300 click 1 && scrot -o --pointer /tmp/direct.png", SHOT_RUNS);
        const clicks = await sample(SHOT_RUNS, async (i) => {
          await desktop.leftClick(300 + (i % 2), 300);
          await desktop.screenshot();
        });
        report("click → screenshot round trip, p50", median(clicks), "ms", clickDirect, "xdotool + scrot inside");
        const [desktopMiB, baseMiB] = await Promise.all([idleMemoryMiB(desktop), idleMemoryMiB(base)]);
        report("memory of an idle desktop sandbox", desktopMiB, "MiB", baseMiB, "idle base sandbox");
      } finally {
        await Promise.all([desktop.kill(), base.kill()]);
      }
    } finally {
      await stopBurrow(burrow);
    }

    // From the pool: the same state directory, now with the warm pool on (base sandboxes and one desktop).
    burrow = await startBurrow({ stateDir, instance, subnet, pool: { template: "base", size: 1 } });
    try {
      await (await Sandbox.create(burrow.opts)).kill(); // puts the desktop template in use: its pool starts
      const basePooled = [];
      const desktopPooled = [];
      for (let i = 0; i < CREATE_RUNS; i++) {
        await burrow.orchestrator.warmPoolReady();
        basePooled.push(await createBase(burrow.opts));
        await burrow.orchestrator.warmPoolReady();
        desktopPooled.push(await createToFirstScreenshot(burrow.opts));
      }
      report("desktop create → first screenshot, pooled, p50", median(desktopPooled), "ms", median(basePooled), "create base + run, pooled");
    } finally {
      await stopBurrow(burrow);
    }
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runDesktopBenchmarks();
