// The instance admin and other teams' sandboxes, on the e2e server: E2B's list answers the admin's own team's by
// default; Burrow's `team` parameter lists another team's or every team's (the admin's only); the admin reads and
// kills any sandbox by id (audited in that team's log) but does not otherwise act on it; team keys are unaffected.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox } from "e2b";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

interface CreatedTeam {
  teamID: string;
  adminKey: { key: string };
}

maybe("the instance admin and other teams' sandboxes", () => {
  const api = (key: string) => keyedApi(burrowEnv().apiUrl, key);
  const conn = (key: string) => sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, key);
  const teams: Record<"a" | "b", CreatedTeam> = {} as Record<"a" | "b", CreatedTeam>;
  let ofA: Sandbox;
  let ofAdmin: Sandbox;
  const ids = (json: unknown) => (json as Array<{ sandboxID: string }>).map((s) => s.sandboxID);

  beforeAll(async () => {
    for (const label of ["a", "b"] as const) {
      const res = await api(burrowEnv().apiKey)("POST", "/burrow/v1/teams", { name: `ops-${label}-${randomBytes(3).toString("hex")}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      teams[label] = res.json as CreatedTeam;
    }
    ofA = await Sandbox.create("base", { ...conn(teams.a.adminKey.key), timeoutMs: 120_000 });
    ofAdmin = await Sandbox.create("base", { ...conn(burrowEnv().apiKey), timeoutMs: 120_000 });
  }, 300_000);

  afterAll(async () => {
    await ofA?.kill().catch(() => undefined);
    await ofAdmin?.kill().catch(() => undefined);
  });

  test("lists: the admin's own team by default, another team's or every team's with team=", async () => {
    const admin = api(burrowEnv().apiKey);
    const own = await admin("GET", "/v2/sandboxes");
    expect(ids(own.json)).toContain(ofAdmin.sandboxId);
    expect(ids(own.json)).not.toContain(ofA.sandboxId);
    const all = await admin("GET", "/v2/sandboxes?team=all");
    expect(all.status).toBe(200);
    expect(ids(all.json)).toEqual(expect.arrayContaining([ofA.sandboxId, ofAdmin.sandboxId]));
    const onlyA = await admin("GET", `/v2/sandboxes?team=${teams.a.teamID}`);
    expect(ids(onlyA.json)).toEqual([ofA.sandboxId]);
    expect(ids((await admin("GET", "/sandboxes?team=all")).json)).toContain(ofA.sandboxId);
    expect((await admin("GET", "/v2/sandboxes?team=00000000-0000-0000-0000-000000000000")).status).toBe(404);
    // The SDK's list (no parameter) is E2B's answer.
    const listed = await Sandbox.list(conn(burrowEnv().apiKey)).nextItems();
    expect(listed.map((s) => s.sandboxId)).not.toContain(ofA.sandboxId);

    // Team keys: their own team only.
    const a = api(teams.a.adminKey.key);
    expect(ids((await a("GET", `/v2/sandboxes?team=${teams.a.teamID}`)).json)).toEqual([ofA.sandboxId]);
    const refused = await a("GET", "/v2/sandboxes?team=all");
    expect(refused.status).toBe(403);
    expect(refused.json.message).toContain("instance admin");
    expect((await a("GET", `/v2/sandboxes?team=${teams.b.teamID}`)).status).toBe(404);
    expect(ids((await api(teams.b.adminKey.key)("GET", "/v2/sandboxes")).json)).not.toContain(ofA.sandboxId);
  });

  test("the admin reads and kills another team's sandbox by id, audited in that team's log; nothing else", async () => {
    const admin = api(burrowEnv().apiKey);
    const info = await Sandbox.getInfo(ofA.sandboxId, conn(burrowEnv().apiKey));
    expect(info.sandboxId).toBe(ofA.sandboxId);
    expect((await admin("GET", `/sandboxes/${ofA.sandboxId}/metrics`)).status).toBe(200);
    // Reading and killing only: pausing or changing it stays the team's.
    expect((await admin("POST", `/sandboxes/${ofA.sandboxId}/pause`, {})).status).toBe(404);
    expect((await admin("POST", `/sandboxes/${ofA.sandboxId}/timeout`, { timeout: 30 })).status).toBe(404);
    // Team keys are unaffected.
    expect((await api(teams.b.adminKey.key)("GET", `/sandboxes/${ofA.sandboxId}`)).status).toBe(404);
    expect(await Sandbox.kill(ofA.sandboxId, conn(teams.b.adminKey.key))).toBe(false);

    expect(await Sandbox.kill(ofA.sandboxId, conn(burrowEnv().apiKey))).toBe(true);
    expect(await ofA.isRunning()).toBe(false);
    const log = await api(teams.a.adminKey.key)("GET", "/burrow/v1/audit?limit=50");
    const kill = (log.json as Array<{ action: string; resourceID: string; teamID: string; detail?: Record<string, unknown> }>).find(
      (e) => e.action === "kill" && e.resourceID === ofA.sandboxId,
    );
    expect(kill).toMatchObject({ teamID: teams.a.teamID, detail: { byInstanceAdmin: true } });
  });
});
