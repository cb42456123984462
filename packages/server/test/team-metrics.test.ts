// Team metrics in burrow.db: samples written by one server survive it (a second store on the same state directory
// reads them), are deleted past the retention, and teams are sampled only while active and for the retention after.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, test } from "vitest";
import { openStore, type Store } from "../src/store/store.js";
import { TeamMetrics } from "../src/teams/team-metrics.js";

let dir: string;
let store: Store;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "burrow-team-metrics-"));
  store = openStore(dir);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const HOUR = 3600_000;

test("samples survive a restart of the store, and the retention bounds them", () => {
  const running = new Map<string, number>([["blue", 2]]);
  const t0 = Date.now() - 2 * HOUR;
  const first = new TeamMetrics({ db: store.db, running: () => running, intervalMs: 5_000, retentionMs: HOUR });
  first.started("blue", 3);
  first.sample(t0);
  running.set("blue", 1);
  first.sample(t0 + 5_000);
  first.close();
  expect(first.query("blue", 0, Number.MAX_SAFE_INTEGER)).toHaveLength(2);
  store.close();

  // A restart: a new store and metrics on the same database.
  store = openStore(dir);
  running.clear();
  const second = new TeamMetrics({ db: store.db, running: () => running, intervalMs: 5_000, retentionMs: HOUR });
  const s0 = Math.floor(t0 / 1000);
  // Older than the retention is still there until the next sample prunes it.
  expect(second.query("blue", s0, s0 + 5)).toEqual([
    { timestampUnix: s0, concurrentSandboxes: 2, sandboxStartRate: 0.6 },
    { timestampUnix: s0 + 5, concurrentSandboxes: 1, sandboxStartRate: 0 },
  ]);
  const now = Date.now();
  running.set("red", 1);
  second.sample(now);
  expect(second.query("blue", 0, Number.MAX_SAFE_INTEGER)).toEqual([]);
  expect(second.query("red", 0, Number.MAX_SAFE_INTEGER)).toEqual([{ timestampUnix: Math.floor(now / 1000), concurrentSandboxes: 1, sandboxStartRate: 0 }]);
  second.close();
});

test("a team is sampled while active and for the retention after, with zeros; never-active teams are not", () => {
  const running = new Map<string, number>([["green", 1], ["idle", 0]]);
  const metrics = new TeamMetrics({ db: store.db, running: () => running, intervalMs: 1_000, retentionMs: 10_000 });
  const t = Date.now();
  metrics.sample(t);
  running.set("green", 0);
  metrics.sample(t + 1_000);
  metrics.sample(t + 9_000);
  const s = Math.floor(t / 1000);
  const seen = () => metrics.query("green", s - 1, s + 20).map((x) => [x.timestampUnix - s, x.concurrentSandboxes]);
  expect(seen()).toEqual([[0, 1], [1, 0], [9, 0]]);
  expect(metrics.query("idle", 0, Number.MAX_SAFE_INTEGER)).toEqual([]);
  // A restart within the retention keeps sampling a recently active team (its zeros too).
  const again = new TeamMetrics({ db: store.db, running: () => running, intervalMs: 1_000, retentionMs: 10 * HOUR });
  again.sample(t + 11_000);
  expect(seen()).toEqual([[0, 1], [1, 0], [9, 0], [11, 0]]);
  again.close();
  // Past the retention after its last activity: no new sample, and the old ones are pruned.
  metrics.sample(t + 12_000);
  expect(seen()).toEqual([[9, 0], [11, 0]]);
  metrics.close();
});
