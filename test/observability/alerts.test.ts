// Alerts against the real server: a webhook receiver on the loopback gets a signed OOM alert from a real sandbox
// that allocates past its memory limit; a receiver that fails gets the same alert again with back-off until it
// answers 2xx, and the delivery log (REST) shows every attempt. Webhooks are configured over REST.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, test } from "vitest";
import { Sandbox } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";

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
