// Teams on one real server with the official SDK: two teams' keys, what one cannot see or do to the other's
// sandboxes, snapshots, bus subjects and host paths; key endpoints in E2B's shapes; revocation ending an open
// stream; per-team quotas (concurrency and create rate) answered 429; audit entries with key and team.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { NotFoundError, RateLimitError, Sandbox } from "e2b";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;
const TEMPLATE = "base";

interface CreatedTeam {
  teamID: string;
  name: string;
  adminKey: { id: string; key: string; name: string; mask: Record<string, unknown>; createdAt: string };
}

function api(key: string) {
  return keyedApi(burrowEnv().apiUrl, key);
}

function opts(apiKey: string) {
  const env = burrowEnv();
  return sdkOptions(env.apiUrl, env.sandboxUrl, apiKey);
}

maybe("teams", () => {
  let admin: ReturnType<typeof api>;
  let teamA: CreatedTeam;
  let teamB: CreatedTeam;
  let a: ReturnType<typeof api>;
  let b: ReturnType<typeof api>;
  let sandboxA: Sandbox;
  const cleanup: Sandbox[] = [];

  beforeAll(async () => {
    admin = api(burrowEnv().apiKey);
    const suffix = randomBytes(4).toString("hex");
    const ca = await admin("POST", "/burrow/v1/teams", { name: `team-a-${suffix}` });
    const cb = await admin("POST", "/burrow/v1/teams", { name: `team-b-${suffix}` });
    expect(ca.status, JSON.stringify(ca.json)).toBe(201);
    expect(cb.status).toBe(201);
    teamA = ca.json;
    teamB = cb.json;
    a = api(teamA.adminKey.key);
    b = api(teamB.adminKey.key);
    sandboxA = await Sandbox.create(TEMPLATE, { ...opts(teamA.adminKey.key), timeoutMs: 300_000 });
    cleanup.push(sandboxA);
  }, 300_000);

  afterAll(async () => {
    for (const s of cleanup) await s.kill().catch(() => undefined);
  });

  test("only the instance admin creates teams; a team key sees its own team in E2B's Team shape", async () => {
    expect((await a("POST", "/burrow/v1/teams", { name: `x-${randomBytes(3).toString("hex")}` })).status).toBe(403);
    const teams = await a("GET", "/teams");
    expect(teams.status).toBe(200);
    expect(teams.json).toEqual([{ teamID: teamA.teamID, name: teamA.name, apiKey: teamA.adminKey.key, isDefault: true }]);
    const all = await admin("GET", "/teams");
    expect(all.json.map((t: { teamID: string }) => t.teamID)).toEqual(expect.arrayContaining([teamA.teamID, teamB.teamID]));
  });

  test("key endpoints answer in E2B's shapes, for team admin keys only", async () => {
    const created = await a("POST", "/api-keys", { name: "ci" });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      key: expect.stringMatching(/^e2b_[0-9a-f]{40}$/),
      name: "ci",
      createdAt: expect.any(String),
      createdBy: null,
      lastUsed: null,
      mask: { prefix: "e2b_", valueLength: 40, maskedValuePrefix: expect.any(String), maskedValueSuffix: created.json.key.slice(-4) },
    });
    const list = await a("GET", "/api-keys");
    expect(list.status).toBe(200);
    expect(list.json.map((k: { id: string }) => k.id)).toEqual([teamA.adminKey.id, created.json.id]);
    expect(JSON.stringify(list.json)).not.toContain(created.json.key);
    // A member key may not manage keys; another team's key id is 404 to team B.
    expect((await api(created.json.key)("GET", "/api-keys")).status).toBe(403);
    expect((await b("PATCH", `/api-keys/${created.json.id}`, { name: "stolen" })).status).toBe(404);
    expect((await b("DELETE", `/api-keys/${created.json.id}`)).status).toBe(404);
    expect((await a("PATCH", `/api-keys/${created.json.id}`, { name: "ci-2" })).status).toBe(200);
    expect((await a("GET", "/api-keys")).json.find((k: { id: string }) => k.id === created.json.id).name).toBe("ci-2");
    expect((await a("DELETE", `/api-keys/${created.json.id}`)).status).toBe(204);
    expect((await api(created.json.key)("GET", "/v2/sandboxes")).status).toBe(401);
  });

  test("team B cannot list, get, connect to, kill, pause, fork, snapshot or checkpoint team A's sandbox", async () => {
    const id = sandboxA.sandboxId;
    const optsB = opts(teamB.adminKey.key);
    const listedB = await Sandbox.list(optsB).nextItems();
    expect(listedB.map((s) => s.sandboxId)).not.toContain(id);
    const listedA = await Sandbox.list(opts(teamA.adminKey.key)).nextItems();
    expect(listedA.map((s) => s.sandboxId)).toContain(id);
    await expect(Sandbox.getInfo(id, optsB)).rejects.toBeInstanceOf(NotFoundError);
    await expect(Sandbox.connect(id, optsB)).rejects.toThrow();
    expect(await Sandbox.kill(id, optsB)).toBe(false);
    for (const [method, path, body] of [
      ["POST", `/sandboxes/${id}/pause`, {}],
      ["POST", `/sandboxes/${id}/fork`, {}],
      ["POST", `/sandboxes/${id}/snapshots`, {}],
      ["POST", `/sandboxes/${id}/timeout`, { timeout: 10 }],
      ["POST", `/burrow/v1/sandboxes/${id}/checkpoints`, {}],
      ["GET", `/burrow/v1/sandboxes/${id}/checkpoints`, undefined],
      ["GET", `/sandboxes/${id}/metrics`, undefined],
    ] as const) {
      const r = await b(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json).toEqual({ code: 404, message: expect.stringContaining(id) });
    }
    // Still running and untouched for its owner.
    expect((await Sandbox.getInfo(id, opts(teamA.adminKey.key))).state).toBe("running");
    expect(await sandboxA.isRunning()).toBe(true);
  });

  test("team B cannot read files of or route traffic to team A's sandbox without its token", async () => {
    await sandboxA.files.write("/tmp/secret.txt", "team a only");
    const env = burrowEnv();
    // envd through the gateway with B's API key but not the sandbox's access token: refused by envd.
    const res = await fetch(`${env.sandboxUrl}/files?path=/tmp/secret.txt`, {
      headers: { "x-api-key": teamB.adminKey.key, "e2b-sandbox-id": sandboxA.sandboxId, "e2b-sandbox-port": "49983" },
    });
    const text = await res.text();
    expect(res.status).toBe(401);
    expect(text).not.toContain("team a only");
  });

  test("team B cannot use team A's snapshot, and does not see it listed", async () => {
    const snap = await a("POST", `/sandboxes/${sandboxA.sandboxId}/snapshots`, {});
    expect(snap.status).toBe(201);
    const snapshotId: string = snap.json.snapshotID;
    expect((await b("GET", "/snapshots")).json.map((s: { snapshotID: string }) => s.snapshotID)).not.toContain(snapshotId);
    expect((await a("GET", "/snapshots")).json.map((s: { snapshotID: string }) => s.snapshotID)).toContain(snapshotId);
    const created = await b("POST", "/v2/sandboxes", { templateID: snapshotId });
    expect(created.status).toBe(404);
    expect((await b("DELETE", `/templates/${snapshotId}`)).status).toBe(404);
    expect((await a("DELETE", `/templates/${snapshotId}`)).status).toBe(204);
  });

  test("team B cannot see, get, delete or mount team A's volume, nor read A's secrets; secrets are shared within a team", async () => {
    const name = `vol-${randomBytes(3).toString("hex")}`;
    const vol = await a("POST", "/volumes", { name });
    expect(vol.status, JSON.stringify(vol.json)).toBe(201);
    const volumeId: string = vol.json.volumeID;
    try {
      expect((await b("GET", "/volumes")).json.map((v: { volumeID: string }) => v.volumeID)).not.toContain(volumeId);
      expect((await a("GET", "/volumes")).json.map((v: { volumeID: string }) => v.volumeID)).toContain(volumeId);
      expect(await b("GET", `/volumes/${volumeId}`)).toEqual({ status: 404, json: { code: 404, message: `volume '${volumeId}' not found` } });
      expect((await b("DELETE", `/volumes/${volumeId}`)).status).toBe(404);
      const mount = await b("POST", "/v2/sandboxes", { templateID: TEMPLATE, volumeMounts: [{ name, path: "/mnt/data" }] });
      expect(mount).toEqual({ status: 404, json: { code: 404, message: `volume '${name}' not found` } });
      expect((await a("GET", `/volumes/${volumeId}`)).status).toBe(200);
    } finally {
      expect((await a("DELETE", `/volumes/${volumeId}`)).status).toBe(204);
    }
    const secret = await a("POST", "/secrets", { name: `s-${randomBytes(3).toString("hex")}`, value: "hunter2" });
    expect(secret.status).toBe(201);
    const secretId = secret.json.secretID ?? secret.json.id;
    expect((await b("GET", `/secrets/${secretId}`)).status).toBe(404);
    // Secrets are the team's: another key of team A sees and deletes it.
    const member = await a("POST", "/api-keys", { name: "secrets-member" });
    const asMember = api(member.json.key);
    expect((await asMember("GET", `/secrets/${secretId}`)).status).toBe(200);
    expect((await asMember("DELETE", `/secrets/${secretId}`)).status).toBe(204);
    expect((await a("GET", `/secrets/${secretId}`)).status).toBe(404);
    expect((await a("DELETE", `/api-keys/${member.json.id}`)).status).toBe(204);
  });

  test("bus, triggers, models: team B cannot subscribe to A's sandbox events, publish in A's namespace, trigger on A's sandbox or change the model gateway", async () => {
    const sub = await b("GET", `/burrow/v1/bus/subscribe?subject=${encodeURIComponent(`sbx.*.${sandboxA.sandboxId}.>`)}`);
    expect(sub.status).toBe(403);
    expect((await b("GET", `/burrow/v1/bus/subscribe?subject=${encodeURIComponent("sbx.>")}`)).status).toBe(403);
    expect((await b("POST", "/burrow/v1/bus/publish", { subject: `team.${teamA.teamID}.chat`, data: "x" })).status).toBe(403);
    expect((await b("POST", "/burrow/v1/bus/publish", { subject: `team.${teamB.teamID}.chat`, data: "x" })).status).toBe(202);
    expect((await b("GET", `/burrow/v1/bus/subscribe?subject=${encodeURIComponent(`audit.${teamA.teamID}.>`)}`)).status).toBe(403);
    // Triggers and tasks naming A's sandbox are 404 to B; rules on a shared template would see every team's sandboxes.
    expect((await b("POST", "/burrow/v1/triggers", { on: { sandboxId: sandboxA.sandboxId, category: "fs" }, in: "source", run: { cmd: "true" } })).status).toBe(404);
    expect((await b("POST", "/burrow/v1/tasks", { target: { sandboxId: sandboxA.sandboxId }, run: { cmd: "true" } })).status).toBe(404);
    expect((await b("POST", "/burrow/v1/triggers", { on: { templateId: TEMPLATE }, in: { template: TEMPLATE }, run: { cmd: "true" } })).status).toBe(403);
    // The model gateway is configured by the operator; per-sandbox usage only for the sandbox's team.
    expect((await b("POST", "/burrow/v1/models/providers", { name: "x", kind: "openai", baseUrl: "http://127.0.0.1:1", key: null })).status).toBe(403);
    expect((await b("GET", `/burrow/v1/models/usage?sandboxID=${sandboxA.sandboxId}`)).status).toBe(404);
    expect((await a("GET", `/burrow/v1/models/usage?sandboxID=${sandboxA.sandboxId}`)).status).toBe(200);
  });

  test("bus: a team sees its own audit events, with key and team", async () => {
    const env = burrowEnv();
    const controller = new AbortController();
    const res = await fetch(`${env.apiUrl}/burrow/v1/bus/subscribe?subject=${encodeURIComponent(`audit.${teamA.teamID}.>`)}`, {
      headers: { "x-api-key": teamA.adminKey.key },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // ": subscribed"
    const key = await a("POST", "/api-keys", { name: "audited" });
    let text = "";
    while (!text.includes("event: message")) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const data = JSON.parse(text.split("data: ")[1]!.split("\n")[0]!) as { subject: string; data: string };
    expect(data.subject).toBe(`audit.${teamA.teamID}.create`);
    expect(JSON.parse(data.data)).toMatchObject({ action: "create", resourceKind: "api_key", resourceID: key.json.id, teamID: teamA.teamID, keyID: teamA.adminKey.id });
    expect((await a("DELETE", `/api-keys/${key.json.id}`)).status).toBe(204);
  });

  test("a host path as a template base needs the instance admin key", async () => {
    const name = `hostpath-${randomBytes(3).toString("hex")}`;
    const req = await b("POST", "/v3/templates", { name });
    expect(req.status).toBe(202);
    const start = await b("POST", `/v2/templates/${req.json.templateID}/builds/${req.json.buildID}`, { fromImage: "oci:/etc", steps: [] });
    expect(start.status).toBe(403);
    expect(start.json).toEqual({ code: 403, message: expect.stringContaining("instance admin") });
    // Team A does not see team B's template.
    expect((await a("GET", `/templates/${req.json.templateID}`)).status).toBe(404);
    expect((await a("GET", "/templates")).json.map((t: { templateID: string }) => t.templateID)).not.toContain(req.json.templateID);
  });

  test("a revoked key is refused at once and its open /burrow/v1 stream ends", async () => {
    const member = await b("POST", "/api-keys", { name: "streamer" });
    const env = burrowEnv();
    const res = await fetch(`${env.apiUrl}/burrow/v1/bus/subscribe?subject=${encodeURIComponent(`team.${teamB.teamID}.rev`)}`, {
      headers: { "x-api-key": member.json.key },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // ": subscribed"
    const ended = (async () => {
      try {
        for (;;) if ((await reader.read()).done) return "ended";
      } catch {
        return "ended";
      }
    })();
    expect((await b("DELETE", `/api-keys/${member.json.id}`)).status).toBe(204);
    expect(await ended).toBe("ended");
    const after = await api(member.json.key)("GET", "/v2/sandboxes");
    expect(after).toEqual({ status: 401, json: { code: 401, message: "invalid API key" } });
  });

  test("quota: the (n+1)-th concurrent sandbox gets 429 naming the quota, and succeeds once one ends", async () => {
    const patched = await admin("PATCH", `/burrow/v1/teams/${teamB.teamID}`, { quotas: { maxRunningSandboxes: 1 } });
    expect(patched.status).toBe(200);
    expect(patched.json.quotas.maxRunningSandboxes).toBe(1);
    expect((await b("PATCH", `/burrow/v1/teams/${teamB.teamID}`, { quotas: { maxRunningSandboxes: 100 } })).status).toBe(403);
    const optsB = opts(teamB.adminKey.key);
    const first = await Sandbox.create(TEMPLATE, { ...optsB, timeoutMs: 120_000 });
    cleanup.push(first);
    const refused = await b("POST", "/v2/sandboxes", { templateID: TEMPLATE });
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ code: 429, message: expect.stringMatching(/maxRunningSandboxes.*1 running.*1 at once/) });
    await expect(Sandbox.create(TEMPLATE, { ...optsB, timeoutMs: 120_000 })).rejects.toBeInstanceOf(RateLimitError);
    // Team A is not limited by B's quota.
    const other = await Sandbox.create(TEMPLATE, { ...opts(teamA.adminKey.key), timeoutMs: 120_000 });
    cleanup.push(other);
    await first.kill();
    const second = await Sandbox.create(TEMPLATE, { ...optsB, timeoutMs: 120_000 });
    cleanup.push(second);
    await second.kill();
    await other.kill();
    await admin("PATCH", `/burrow/v1/teams/${teamB.teamID}`, { quotas: { maxRunningSandboxes: null } });
  });

  test("quota: create rate per minute, and the timeout cap", async () => {
    const team = (await admin("POST", "/burrow/v1/teams", { name: `rate-${randomBytes(3).toString("hex")}` })).json as CreatedTeam;
    expect((await admin("PATCH", `/burrow/v1/teams/${team.teamID}`, { quotas: { createsPerMinute: 1, maxTimeoutSec: 600 } })).status).toBe(200);
    const r = api(team.adminKey.key);
    const long = await r("POST", "/v2/sandboxes", { templateID: TEMPLATE, timeout: 601 });
    expect(long.status).toBe(429);
    expect(long.json.message).toContain("maxTimeoutSec");
    const one = await Sandbox.create(TEMPLATE, { ...opts(team.adminKey.key), timeoutMs: 60_000 });
    cleanup.push(one);
    await one.kill();
    const refused = await r("POST", "/v2/sandboxes", { templateID: TEMPLATE, timeout: 60 });
    expect(refused.status).toBe(429);
    expect(refused.json.message).toMatch(/createsPerMinute.*started 1 sandboxes in the last minute/);
  });

  test("audit: create and kill with key and team, scoped to the team; metrics in E2B's shape", async () => {
    const s = await Sandbox.create(TEMPLATE, { ...opts(teamA.adminKey.key), timeoutMs: 60_000 });
    await s.kill();
    const log = await a("GET", "/burrow/v1/audit?limit=50");
    expect(log.status).toBe(200);
    const mine = log.json.filter((e: { resourceID: string }) => e.resourceID === s.sandboxId);
    expect(mine.map((e: { action: string }) => e.action)).toEqual(["kill", "create"]);
    for (const e of mine) expect(e).toMatchObject({ teamID: teamA.teamID, keyID: teamA.adminKey.id, resourceKind: "sandbox" });
    const theirs = await b("GET", "/burrow/v1/audit?limit=1000");
    expect(theirs.json.some((e: { resourceID: string }) => e.resourceID === s.sandboxId)).toBe(false);
    const adminView = await admin("GET", `/burrow/v1/audit?limit=1000&teamID=${teamA.teamID}`);
    expect(adminView.json.some((e: { resourceID: string }) => e.resourceID === s.sandboxId)).toBe(true);
    const metrics = await a("GET", `/teams/${teamA.teamID}/metrics`);
    expect(metrics.status).toBe(200);
    for (const m of metrics.json) {
      expect(m).toEqual({ timestamp: expect.any(String), timestampUnix: expect.any(Number), concurrentSandboxes: expect.any(Number), sandboxStartRate: expect.any(Number) });
    }
    expect((await b("GET", `/teams/${teamA.teamID}/metrics`)).status).toBe(404);
  });
});
