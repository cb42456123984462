// The alert watchers on a real bus, embedded and on a real nats-server alike, with webhooks on the loopback: dead
// letters of a real work queue (one alert at once, one summary per window of a flood, a webhook's threshold, per
// team), agents the real liveness monitor marks down (once per loss), full disks (once per episode) and the rate
// window on a fake clock.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { pino } from "pino";
import { createBus, LivenessMonitor, sendHeartbeat, WorkQueue, type Bus } from "@burrow/bus";
import type { SandboxMetricSample } from "@burrow/orchestrator";
import type { Alert } from "../src/alerts/alert-kinds.js";
import { AlertService } from "../src/alerts/alert-service.js";
import { startAlertWatches, type AlertWatches } from "../src/alerts/alert-watches.js";
import { RateWindow } from "../src/alerts/rate-window.js";
import { WebhookStore } from "../src/alerts/webhook-store.js";
import { busNamespace } from "../src/teams/bus-names.js";
import { SandboxEvents } from "../src/lifecycle/events.js";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";

const DEFAULT_TEAM = "00000000-0000-4000-8000-000000000001";
const TEAM_A = "aaaaaaaa-1111-4000-8000-00000000000a";
const TEAM_B = "bbbbbbbb-2222-4000-8000-00000000000b";
const WINDOW_MS = 400;

const logger = pino({ level: "silent" });

async function until(check: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !check() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
}

describe("RateWindow", () => {
  afterEach(() => vi.useRealTimers());

  it("reports the first hit at once, the rest of its window at the window's end, and starts afresh after a quiet one", async () => {
    vi.useFakeTimers();
    const emitted: Array<[string, number]> = [];
    const w = new RateWindow(1000, (key, count) => emitted.push([key, count]));
    w.hit("q");
    expect(emitted).toEqual([["q", 1]]);
    for (let i = 0; i < 50; i++) w.hit("q");
    w.hit("other");
    expect(emitted).toEqual([["q", 1], ["other", 1]]);
    await vi.advanceTimersByTimeAsync(999);
    expect(emitted).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(emitted).toEqual([["q", 1], ["other", 1], ["q", 50]]);
    // The summary opened a window: a hit inside it waits for its end; a window with nothing closes quietly.
    w.hit("q");
    await vi.advanceTimersByTimeAsync(1000);
    expect(emitted.at(-1)).toEqual(["q", 1]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(emitted).toHaveLength(4);
    w.hit("q");
    expect(emitted).toHaveLength(5);
    w.close();
  });
});

describe.each(["embedded", "nats"] as const)("alert watchers on a real %s bus", (kind) => {
  let dir: string;
  let nats: NatsServerFixture | undefined;
  let bus: Bus;
  let liveness: LivenessMonitor;
  let alerts: AlertService;
  let watches: AlertWatches;
  let receiver: Server;
  let url: string;
  const got: Array<{ path: string; alert: Alert }> = [];
  const onBus: Alert[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "alert-watches-"));
    if (kind === "nats") nats = await NatsServerFixture.start();
    bus = nats ? await createBus({ kind: "nats", servers: nats.url }) : await createBus({ kind: "embedded", path: join(dir, "bus.db") });
    liveness = await LivenessMonitor.open(bus, { windowMs: 300, pollMs: 50 });
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        got.push({ path: req.url ?? "", alert: JSON.parse(body) as Alert });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    alerts = new AlertService({ webhooks: new WebhookStore(dir), logger, bus, sandboxInfo: () => undefined, volumeTeam: (id) => (id === "vol-a" ? TEAM_A : undefined) });
    const sub = bus.subscribe("alert.>");
    void (async () => {
      for await (const m of sub) onBus.push(JSON.parse(new TextDecoder().decode(m.data)) as Alert);
    })();
    watches = startAlertWatches({
      alerts,
      logger,
      events: new SandboxEvents(logger),
      bus,
      liveness,
      teams: () => ({ defaultTeamId: DEFAULT_TEAM, list: () => [{ teamId: DEFAULT_TEAM }, { teamId: TEAM_A }, { teamId: TEAM_B }] }),
      teamOfSandbox: () => undefined,
      windowMs: WINDOW_MS,
    });
  });

  afterAll(async () => {
    watches.close();
    alerts.close();
    await liveness.close();
    await bus.close();
    await nats?.stop();
    await new Promise((resolve) => receiver.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const hook = (path: string, teamId: string | null, more: { kinds?: Alert["kind"][]; deadLetterThreshold?: number } = {}) =>
    alerts.webhooks.add({ url: `${url}${path}`, kinds: more.kinds ?? ["dead_letters", "heartbeat_lost"], secret: "s".repeat(32), teamId, ...more });
  const to = (path: string) => got.filter((g) => g.path === path).map((g) => g.alert);

  it("dead letters: one alert at once and one per window of a flood, a webhook's threshold, only the queue's team", async () => {
    const a = hook("/a", TEAM_A);
    const b = hook("/b", TEAM_B);
    const admin = hook("/admin", null);
    const atLeast10 = hook("/a10", TEAM_A, { deadLetterThreshold: 10 });
    const queue = await WorkQueue.open(bus, { name: `${busNamespace(TEAM_A, DEFAULT_TEAM)}jobs`, maxAttempts: 1 });
    const consumer = await queue.consumer();
    try {
      for (let i = 0; i < 30; i++) await queue.enqueue(new TextEncoder().encode(`m${i}`));
      for (let i = 0; i < 30; i++) {
        const m = await consumer.next({ timeoutMs: 1000 });
        await m!.nack({ delayMs: 0 });
      }
      // How fast dead letters come depends on the backend (NATS moves them on its advisories): wait for all 30.
      await until(() => to("/a").at(-1)?.details["deadLetters"] === 30, 20_000);
      await new Promise((r) => setTimeout(r, WINDOW_MS * 2));
      const alertsA = to("/a");
      expect(alertsA.every((x) => x.kind === "dead_letters" && x.teamId === TEAM_A && x.details["queue"] === "jobs")).toBe(true);
      // The first at once; then at most one per window, whose counts add up to every dead letter.
      expect(alertsA[0]!.details).toMatchObject({ newDeadLetters: 1, deadLetters: 1 });
      expect(alertsA.length).toBeLessThan(30);
      expect(alertsA.reduce((sum, x) => sum + Number(x.details["newDeadLetters"]), 0)).toBe(30);
      for (let i = 1; i < alertsA.length; i++) {
        expect(Date.parse(alertsA[i]!.at) - Date.parse(alertsA[i - 1]!.at)).toBeGreaterThanOrEqual(WINDOW_MS - 5);
        expect(alertsA[i]!.details["deadLetters"]).toBe(Number(alertsA[i - 1]!.details["deadLetters"]) + Number(alertsA[i]!.details["newDeadLetters"]));
      }
      expect(to("/admin").map((x) => x.id)).toEqual(alertsA.map((x) => x.id));
      expect(to("/b")).toEqual([]);
      // Threshold 10: told only once the count grew by 10 since it was last told (never of the first, a single one).
      let told = 0;
      const expected = alertsA.map((x) => Number(x.details["deadLetters"])).filter((total) => total - told >= 10 && (told = total) > 0);
      expect(expected.length).toBeGreaterThan(0);
      expect(to("/a10").map((x) => x.details["deadLetters"])).toEqual(expected);
      expect(onBus.filter((x) => x.kind === "dead_letters").map((x) => x.id)).toEqual(alertsA.map((x) => x.id));
    } finally {
      await consumer.close();
      for (const h of [a, b, admin, atLeast10]) alerts.webhooks.remove(h.id);
    }
  });

  it("dead letters: one moved by two servers sharing the bus (both announce it) is counted once", async () => {
    const a = hook("/dup", TEAM_A, { kinds: ["dead_letters"] });
    const stream = `QUEUE_${busNamespace(TEAM_A, DEFAULT_TEAM)}dups`;
    const move = (seq: number) =>
      bus.publishDurable(`dlq.${stream}.lane0`, new TextEncoder().encode(`m${seq}`), {
        msgId: `dlq:${stream}:${seq}`,
        headers: { "burrow-dlq-stream": stream, "burrow-dlq-seq": String(seq), "burrow-dlq-reason": "max_deliver" },
      });
    try {
      // Message 1 moved by two servers, then message 2 by one.
      await move(1);
      await move(1);
      await move(2);
      await until(() => to("/dup").at(-1)?.details["deadLetters"] === 2, 5000);
      await new Promise((r) => setTimeout(r, WINDOW_MS * 2));
      expect(to("/dup").map((x) => x.details["deadLetters"])).toEqual([1, 2]);
    } finally {
      alerts.webhooks.remove(a.id);
    }
  });

  it("heartbeat_lost: once per loss, for the agent's team, under the agent's own name", async () => {
    const a = hook("/hb-a", TEAM_A, { kinds: ["heartbeat_lost"] });
    const b = hook("/hb-b", TEAM_B, { kinds: ["heartbeat_lost"] });
    const agentId = `${busNamespace(TEAM_A, DEFAULT_TEAM)}worker`;
    try {
      for (let i = 0; i < 4; i++) {
        await sendHeartbeat(bus, { agentId, group: "g" });
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(to("/hb-a")).toEqual([]);
      await until(() => to("/hb-a").length > 0, 5000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(to("/hb-a").map((x) => [x.kind, x.teamId, x.details["agentId"], x.details["group"]])).toEqual([["heartbeat_lost", TEAM_A, "worker", "g"]]);
      expect(to("/hb-b")).toEqual([]);
      // Back, then lost again: a second alert.
      await sendHeartbeat(bus, { agentId, group: "g" });
      await until(() => to("/hb-a").length > 1, 5000);
      expect(to("/hb-a")).toHaveLength(2);
    } finally {
      for (const h of [a, b]) alerts.webhooks.remove(h.id);
    }
  });

  it("disk_quota: once per episode of a full disk, again only after the usage fell well below the limit", async () => {
    const admin = hook("/disk", null, { kinds: ["disk_quota"] });
    const diskA = hook("/disk-a", TEAM_A, { kinds: ["disk_quota"] });
    const diskB = hook("/disk-b", TEAM_B, { kinds: ["disk_quota"] });
    const limit = 64 * 1024 * 1024;
    const sample = (used: number): SandboxMetricSample => ({
      timestamp: new Date(), cpuCount: 1, cpuUsedPct: 0, memUsed: 0, memTotal: 1, memCache: 0, diskUsed: used, diskTotal: limit, diskLimitUsed: used,
    });
    try {
      for (const used of [limit / 2, limit - 2 * 1024 * 1024, limit - 16 * 1024, limit - 16 * 1024, limit, limit * 0.95, limit - 1024, limit * 0.5, limit - 80 * 1024]) {
        alerts.onSample("sbx1", sample(used));
      }
      await until(() => to("/disk").length >= 2, 3000);
      await new Promise((r) => setTimeout(r, 200));
      expect(to("/disk").map((x) => [x.kind, x.sandboxId, x.details["usedBytes"]])).toEqual([
        ["disk_quota", "sbx1", limit - 16 * 1024],
        ["disk_quota", "sbx1", limit - 80 * 1024],
      ]);
      // A full volume seen by two sandboxes is one episode, for the volume's team.
      const volumeSample = (used: number): SandboxMetricSample => ({ ...sample(0), diskLimitUsed: 0, volumeLimits: [{ volumeId: "vol-a", usedBytes: used, limitBytes: limit }] });
      alerts.onSample("sbx2", volumeSample(limit - 32 * 1024));
      alerts.onSample("sbx3", volumeSample(limit - 16 * 1024));
      alerts.onSample("sbx2", volumeSample(limit));
      await until(() => to("/disk-a").length >= 1, 3000);
      await new Promise((r) => setTimeout(r, 200));
      expect(to("/disk-a").map((x) => [x.kind, x.teamId, x.sandboxId, x.details["volumeId"]])).toEqual([["disk_quota", TEAM_A, undefined, "vol-a"]]);
      expect(to("/disk-b")).toEqual([]);
      expect(to("/disk").filter((x) => x.details["volumeId"] === "vol-a")).toHaveLength(1);
    } finally {
      for (const h of [admin, diskA, diskB]) alerts.webhooks.remove(h.id);
    }
  });
});
