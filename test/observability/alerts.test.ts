// Alerts against the real server: a webhook receiver on the loopback gets a signed OOM alert from a real sandbox
// that allocates past its memory limit; a receiver that fails gets the same alert again with back-off until it
// answers 2xx, and the delivery log (REST) shows every attempt. Webhooks are configured over REST. Then each of the
// other kinds from its real cause, for a team of its own: a sandbox that fills its disk, an agent that stops
// heartbeating, messages nacked into the dead-letter queue, creates that drain the warm pool; another team's webhook
// gets none of them, the instance admin's gets them all.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox, Volume } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver that answers each POST with the next status of `statuses` (the last one once they run out). */
async function receiver(statuses: number[]): Promise<{ server: Server; url: string; got: Received[] }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      got.push({ headers: req.headers, body });
      res.writeHead(statuses[Math.min(got.length - 1, statuses.length - 1)]!).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const env = burrowEnv();
  const res = await fetch(`${env.apiUrl}${path}`, {
    method,
    headers: { "x-api-key": env.apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The receiver's own check of Burrow-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>. */
function signedBy(secret: string, r: Received): boolean {
  const header = String(r.headers["burrow-signature"] ?? "");
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const age = Math.abs(Date.now() / 1000 - Number(m[1]));
  return age < 300 && createHmac("sha256", secret).update(`${m[1]}.${r.body}`).digest("hex") === m[2];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !check() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 200));
}

maybe("alerts: signed webhooks with retries", () => {
  const hooks: string[] = [];
  const servers: Server[] = [];
  afterAll(async () => {
    for (const id of hooks) await api("DELETE", `/burrow/v1/alerts/${id}`);
    for (const s of servers) await new Promise((resolve) => s.close(resolve));
  });

  test("bad webhook configs answer 400; a config lists without its secret and deletes", async () => {
    expect((await api("POST", "/burrow/v1/alerts", { url: "ftp://x/y" })).status).toBe(400);
    expect((await api("POST", "/burrow/v1/alerts", { url: "http://127.0.0.1:1/h", kinds: ["nope"] })).status).toBe(400);
    expect((await api("POST", "/burrow/v1/alerts", { url: "http://127.0.0.1:1/h", secret: "short" })).status).toBe(400);
    expect((await api("POST", "/burrow/v1/alerts", { url: "http://127.0.0.1:1/h", deadLetterThreshold: 0 })).status).toBe(400);
    const withThreshold = await api("POST", "/burrow/v1/alerts", { url: "http://127.0.0.1:1/t", kinds: ["dead_letters"], deadLetterThreshold: 5 });
    expect(withThreshold.body).toMatchObject({ kinds: ["dead_letters"], deadLetterThreshold: 5 });
    expect((await api("GET", "/burrow/v1/alerts")).body).toContainEqual(expect.objectContaining({ id: withThreshold.body.id, deadLetterThreshold: 5 }));
    expect((await api("DELETE", `/burrow/v1/alerts/${withThreshold.body.id}`)).status).toBe(204);
    const made = await api("POST", "/burrow/v1/alerts", { url: "http://127.0.0.1:1/h", kinds: ["pool_exhausted"] });
    expect(made.status).toBe(201);
    expect(made.body.secret).toMatch(/^[0-9a-f]{64}$/);
    const listed = (await api("GET", "/burrow/v1/alerts")).body as Array<Record<string, unknown>>;
    expect(listed.find((h) => h["id"] === made.body.id)).toEqual({ id: made.body.id, url: "http://127.0.0.1:1/h", kinds: ["pool_exhausted"], createdAt: made.body.createdAt });
    expect(JSON.stringify(listed)).not.toContain(made.body.secret);
    expect((await api("DELETE", `/burrow/v1/alerts/${made.body.id}`)).status).toBe(204);
    expect((await api("DELETE", `/burrow/v1/alerts/${made.body.id}`)).status).toBe(404);
  });

  test("a sandbox allocating past its memory limit raises a signed oom_kill alert; a failing receiver gets retries", async () => {
    const good = await receiver([200]);
    const flaky = await receiver([500, 503, 204]);
    servers.push(good.server, flaky.server);
    const secret = randomBytes(24).toString("hex");
    const goodHook = await api("POST", "/burrow/v1/alerts", { url: good.url, kinds: ["oom_kill"], secret });
    const flakyHook = await api("POST", "/burrow/v1/alerts", { url: flaky.url, kinds: ["oom_kill"] });
    expect(goodHook.status).toBe(201);
    hooks.push(goodHook.body.id, flakyHook.body.id);

    const sandbox = await Sandbox.create("base", { ...sdkOpts(), timeoutMs: 120_000 });
    try {
      // `tail` keeps a line it never finishes: /dev/zero has no newline, so it grows until the kernel kills it.
      const run = await sandbox.commands.run("tail /dev/zero", { timeoutMs: 60_000 }).catch((e: unknown) => e as { exitCode?: number; error?: string });
      // Killed by a signal: E2B's envd reports exit code -1 and "signal: killed".
      expect(run.exitCode).toBe(-1);
      expect((run as { error?: string }).error).toMatch(/killed/);
      await until(() => good.got.some((r) => JSON.parse(r.body).sandboxId === sandbox.sandboxId), 30_000);
      const received = good.got.find((r) => JSON.parse(r.body).sandboxId === sandbox.sandboxId);
      expect(received, "no oom_kill alert arrived").toBeDefined();
      const alert = JSON.parse(received!.body);
      expect(alert).toMatchObject({ kind: "oom_kill", sandboxId: sandbox.sandboxId, details: { newOomKills: 1 } });
      expect(alert.id).toMatch(/^alt_/);
      expect(received!.headers["content-type"]).toBe("application/json");
      expect(signedBy(secret, received!)).toBe(true);
      expect(signedBy("another-secret-of-some-length", received!)).toBe(false);

      // The flaky receiver: 500, 503, then 204 — the same alert three times, then the log says delivered.
      await until(() => flaky.got.length >= 3, 20_000);
      expect(flaky.got.map((r) => JSON.parse(r.body).id)).toEqual([alert.id, alert.id, alert.id]);
      expect(signedBy(flakyHook.body.secret, flaky.got[2]!)).toBe(true);
      await until(() => false, 300);
      const log = (await api("GET", "/burrow/v1/alerts/deliveries?limit=50")).body as Array<Record<string, any>>;
      const flakyDelivery = log.find((d) => d["alertId"] === alert.id && d["webhookId"] === flakyHook.body.id);
      expect(flakyDelivery).toMatchObject({ state: "delivered", kind: "oom_kill" });
      expect(flakyDelivery!["attempts"].map((a: { status: number }) => a.status)).toEqual([500, 503, 204]);
      const goodDelivery = log.find((d) => d["alertId"] === alert.id && d["webhookId"] === goodHook.body.id);
      expect(goodDelivery!["attempts"].map((a: { status: number }) => a.status)).toEqual([200]);
    } finally {
      await sandbox.kill().catch(() => undefined);
    }
  }, 120_000);
});

maybe("alerts: every kind from its real cause, per team", () => {
  const teams: Record<"a" | "b", { teamID: string; key: string }> = {} as Record<"a" | "b", { teamID: string; key: string }>;
  const hooks: Array<{ key: string; id: string }> = [];
  const got: Record<"a" | "b" | "admin", Received[]> = { a: [], b: [], admin: [] };
  const secrets: Record<"a" | "b" | "admin", string> = { a: "", b: "", admin: "" };
  const servers: Server[] = [];
  const sandboxes: Sandbox[] = [];
  const volumes: string[] = [];
  const call = (who: "a" | "b") => keyedApi(burrowEnv().apiUrl, teams[who].key);
  const alertsTo = (who: "a" | "b" | "admin") => got[who].map((r) => JSON.parse(r.body) as Record<string, any>);
  const run = randomBytes(3).toString("hex");

  beforeAll(async () => {
    const admin = keyedApi(burrowEnv().apiUrl, burrowEnv().apiKey);
    for (const who of ["a", "b"] as const) {
      const made = await admin("POST", "/burrow/v1/teams", { name: `alerts-${who}-${run}` });
      expect(made.status, JSON.stringify(made.json)).toBe(201);
      teams[who] = { teamID: made.json.teamID, key: made.json.adminKey.key };
    }
    for (const who of ["a", "b", "admin"] as const) {
      const r = await receiver([200]);
      servers.push(r.server);
      got[who] = r.got;
      const key = who === "admin" ? burrowEnv().apiKey : teams[who].key;
      const made = await keyedApi(burrowEnv().apiUrl, key)("POST", "/burrow/v1/alerts", { url: r.url });
      expect(made.status).toBe(201);
      expect(made.json.kinds).toHaveLength(6);
      secrets[who] = made.json.secret;
      hooks.push({ key, id: made.json.id });
    }
  });

  afterAll(async () => {
    await Promise.all(sandboxes.map((s) => s.kill().catch(() => undefined)));
    for (const id of volumes) await Volume.destroy(id, sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, teams.a.key)).catch(() => undefined);
    for (const { key, id } of hooks) await keyedApi(burrowEnv().apiUrl, key)("DELETE", `/burrow/v1/alerts/${id}`);
    for (const s of servers) await new Promise((resolve) => s.close(resolve));
  });

  /** Team A's alerts of `kind` matching `pick`, once they arrived; checks signatures and that team B heard nothing. */
  async function teamAlert(kind: string, pick: (a: Record<string, any>) => boolean, ms: number): Promise<Record<string, any>> {
    const find = () => alertsTo("a").find((a) => a["kind"] === kind && pick(a));
    await until(() => find() !== undefined && alertsTo("admin").some((a) => a["id"] === find()!["id"]), ms);
    const alert = find();
    expect(alert, `no ${kind} alert arrived for team A`).toBeDefined();
    expect(alert!["teamId"]).toBe(teams.a.teamID);
    expect(signedBy(secrets.a, got.a.find((r) => JSON.parse(r.body).id === alert!["id"])!)).toBe(true);
    expect(alertsTo("admin").some((a) => a["id"] === alert!["id"])).toBe(true);
    expect(alertsTo("b").filter((a) => a["teamId"] !== teams.b.teamID)).toEqual([]);
    return alert!;
  }

  test("disk_quota: a sandbox that fills its disk raises one alert", async () => {
    const sandbox = await Sandbox.create("base", { ...sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, teams.a.key), timeoutMs: 180_000 });
    sandboxes.push(sandbox);
    // Reserve most of the disk without writing it (fallocate), then write until the quota stops dd.
    const fill = await sandbox.commands.run(
      "for i in $(seq 1 10000); do fallocate -l 256M /home/user/f$i 2>/dev/null || break; done; dd if=/dev/zero of=/home/user/z bs=1M 2>&1; echo rc=$?",
      { timeoutMs: 120_000 },
    );
    expect(fill.stdout).toMatch(/Disk quota exceeded/);
    const alert = await teamAlert("disk_quota", (a) => a["sandboxId"] === sandbox.sandboxId, 30_000);
    expect(alert["details"]["limitBytes"]).toBeGreaterThan(0);
    expect(alert["details"]["usedBytes"]).toBeGreaterThan(alert["details"]["limitBytes"] - 1024 * 1024 * 41);
    // Later samples of the same full disk raise nothing more.
    await sleep(12_000);
    expect(alertsTo("a").filter((a) => a["kind"] === "disk_quota" && a["sandboxId"] === sandbox.sandboxId)).toHaveLength(1);
  }, 240_000);

  test("disk_quota: a volume filled from a sandbox raises one alert for the volume's team", async () => {
    const opts = sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, teams.a.key);
    const volume = await Volume.create(`full-${run}`, opts);
    volumes.push(volume.volumeId);
    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 180_000, volumeMounts: { "/mnt/data": volume } });
    sandboxes.push(sandbox);
    const fill = await sandbox.commands.run(
      "for i in $(seq 1 10000); do fallocate -l 64M /mnt/data/f$i 2>/dev/null || break; done; dd if=/dev/zero of=/mnt/data/z bs=1M 2>&1; echo rc=$?",
      { timeoutMs: 120_000 },
    );
    expect(fill.stdout).toMatch(/Disk quota exceeded/);
    const alert = await teamAlert("disk_quota", (a) => a["details"]["volumeId"] === volume.volumeId, 30_000);
    expect(alert["sandboxId"]).toBeUndefined();
    expect(alert["details"]["usedBytes"]).toBeGreaterThan(alert["details"]["limitBytes"] - 1024 * 1024 * 11);
    // The sandbox's own disk is far from full: no alert about it.
    expect(alertsTo("a").filter((a) => a["kind"] === "disk_quota" && a["sandboxId"] === sandbox.sandboxId)).toEqual([]);
  }, 240_000);

  test("heartbeat_lost: an agent that stops heartbeating raises one alert, with the name its team gave it", async () => {
    const agent = `worker-${run}`;
    for (let i = 0; i < 3; i++) {
      expect((await call("a")("POST", `/burrow/v1/agents/${agent}/heartbeat`, { group: "crawlers" })).status).toBe(204);
      await sleep(500);
    }
    expect(alertsTo("a").filter((a) => a["kind"] === "heartbeat_lost")).toEqual([]);
    const alert = await teamAlert("heartbeat_lost", (a) => a["details"]["agentId"] === agent, 20_000);
    expect(alert["details"]).toMatchObject({ agentId: agent, group: "crawlers" });
    await sleep(3000);
    expect(alertsTo("a").filter((a) => a["kind"] === "heartbeat_lost" && a["details"]["agentId"] === agent)).toHaveLength(1);
  }, 60_000);

  test("dead_letters: messages nacked past their attempts raise an alert naming the team's queue", async () => {
    const queue = `jobs-${run}`;
    const api = call("a");
    for (let i = 0; i < 3; i++) expect((await api("POST", `/burrow/v1/queues/${queue}/messages`, { data: `m${i}` })).status).toBe(201);
    // The queue's default: 5 attempts, then the dead-letter queue.
    for (let handed = 0; handed < 15; ) {
      const m = await api("POST", `/burrow/v1/queues/${queue}/consume`, { timeoutMs: 2000 });
      if (m.status === 204) continue;
      expect(m.status).toBe(200);
      expect((await api("POST", `/burrow/v1/queues/${queue}/messages/${m.json.receipt}/nack`, { delayMs: 0 })).status).toBe(204);
      handed++;
    }
    expect((await api("POST", `/burrow/v1/queues/${queue}/consume`, { timeoutMs: 0 })).status).toBe(204);
    const first = await teamAlert("dead_letters", (a) => a["details"]["queue"] === queue, 10_000);
    expect(first["details"]).toMatchObject({ queue, newDeadLetters: 1, deadLetters: 1 });
    // The other two fell into the window the first opened: one summary at its end, not an alert each.
    expect(alertsTo("a").filter((a) => a["kind"] === "dead_letters" && a["details"]["queue"] === queue)).toHaveLength(1);
  }, 60_000);

  test("pool_exhausted: creates that drain the warm pool raise an alert for the template", async () => {
    const opts = { ...sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, teams.a.key), timeoutMs: 120_000 };
    // The test server's pool holds 2 sandboxes of base: four creates at once take them and launch the rest.
    const made = await Promise.all([0, 1, 2, 3].map(() => Sandbox.create("base", opts)));
    sandboxes.push(...made);
    const alert = await teamAlert("pool_exhausted", () => true, 20_000);
    expect(alert["templateId"]).toBe((await call("a")("GET", `/sandboxes/${made[0]!.sandboxId}`)).json.templateID);
    expect(alert["details"]["creates"]).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
