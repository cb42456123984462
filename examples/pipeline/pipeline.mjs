#!/usr/bin/env node
// collect → clean → analyze → visualize across four sandboxes, each stage started by the file event of the one
// before: sandboxes come from the official `e2b` SDK, watches and triggers from the Burrow SDK.
//
//   E2B_API_URL=http://127.0.0.1:3000 E2B_API_KEY=… node examples/pipeline/pipeline.mjs [out.svg]
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Sandbox } from "e2b";
import { BusClient } from "@burrow/sdk";

const STAGES = ["collect", "clean", "analyze", "visualize"];
const DATA = "/home/user/data";
const CODE = "/home/user/pipeline";
/** What each stage reads (copied in from the stage before) and writes. */
const FILES = { collect: [null, "raw.csv"], clean: ["raw.csv", "clean.csv"], analyze: ["clean.csv", "stats.json"], visualize: ["stats.json", "chart.svg"] };

/**
 * Runs the whole pipeline once and returns what it made. Every sandbox and trigger it creates is removed before it
 * returns (or throws).
 * @param {{ apiUrl?: string, apiKey?: string, template?: string, timeoutMs?: number, log?: (line: string) => void }} [o]
 */
export async function runPipeline(o = {}) {
  const apiUrl = o.apiUrl ?? process.env.E2B_API_URL ?? "http://127.0.0.1:3000";
  const apiKey = o.apiKey ?? process.env.E2B_API_KEY;
  const log = o.log ?? ((line) => console.log(line));
  const conn = { apiUrl, sandboxUrl: o.sandboxUrl ?? process.env.E2B_SANDBOX_URL ?? apiUrl, apiKey };
  const burrow = new BusClient({ baseUrl: apiUrl, apiKey });
  const run = Date.now().toString(36);
  const sandboxes = {};
  const triggers = [];
  try {
    // One sandbox per stage, with the stage's script and an empty data directory.
    for (const stage of STAGES) {
      const sbx = await Sandbox.create(o.template ?? "base", { ...conn, metadata: { pipeline: run, stage } });
      sandboxes[stage] = sbx;
      await sbx.files.makeDir(DATA);
      await sbx.files.write(`${CODE}/${stage}.py`, await readFile(join(import.meta.dirname, "stages", `${stage}.py`), "utf8"));
      log(`${stage}: sandbox ${sbx.sandboxId}`);
    }
    // Every stage's data directory publishes its file events on the bus.
    for (const stage of STAGES) await burrow.watches.create(sandboxes[stage].sandboxId, DATA);

    // Stage n+1 runs when stage n's output appears (the scripts write a temp file and rename it, so the output
    // appears once, complete). The output is copied into the next sandbox before its script runs.
    for (let i = 1; i < STAGES.length; i++) {
      const [prev, stage] = [STAGES[i - 1], STAGES[i]];
      const [input, output] = FILES[stage];
      const t = await burrow.triggers.create({
        id: `pipeline-${run}-${stage}`,
        on: { sandboxId: sandboxes[prev].sandboxId, category: "fs", type: "create", pathPrefix: `${DATA}/${input}` },
        in: { sandboxId: sandboxes[stage].sandboxId },
        inputs: [{ path: `${DATA}/${input}` }],
        cmd: `python3 ${CODE}/${stage}.py ${DATA}/${input} ${DATA}/${output}`,
        category: `pipeline.${stage}`,
      });
      triggers.push(t.id);
    }

    // Wait for the chart: subscribe first, then start the first stage by hand.
    const last = sandboxes.visualize.sandboxId;
    const events = await burrow.events.subscribe({ sandboxId: last, category: "fs", type: "create", pathPrefix: `${DATA}/chart.svg` });
    const timeoutMs = o.timeoutMs ?? 180_000;
    const timer = setTimeout(() => events.close(), timeoutMs);
    try {
      const collect = await sandboxes.collect.commands.run(`python3 ${CODE}/collect.py ${DATA}/raw.csv`);
      log(collect.stdout.trim());
      let done = false;
      for await (const e of events) {
        log(`visualize: ${e.path} created`);
        done = true;
        break;
      }
      if (!done) throw new Error(`the pipeline did not produce chart.svg within ${timeoutMs} ms`);
    } finally {
      clearTimeout(timer);
      events.close();
    }

    const [raw, clean, stats, chart] = await Promise.all([
      sandboxes.collect.files.read(`${DATA}/raw.csv`),
      sandboxes.clean.files.read(`${DATA}/clean.csv`),
      sandboxes.analyze.files.read(`${DATA}/stats.json`),
      sandboxes.visualize.files.read(`${DATA}/chart.svg`),
    ]);
    const tasks = {};
    for (const id of triggers) tasks[id] = (await burrow.triggers.get(id)).fired;
    return { run, raw, clean, stats: JSON.parse(stats), chart, sandboxIds: Object.fromEntries(STAGES.map((s) => [s, sandboxes[s].sandboxId])), fired: tasks };
  } finally {
    for (const id of triggers) await burrow.triggers.delete(id).catch(() => undefined);
    for (const sbx of Object.values(sandboxes)) await sbx.kill().catch(() => undefined);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = process.argv[2] ?? "chart.svg";
  const result = await runPipeline();
  await writeFile(out, result.chart);
  console.log(JSON.stringify(result.stats, null, 2));
  console.log(`chart written to ${out}`);
}
