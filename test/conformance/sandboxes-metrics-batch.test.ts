// GET /sandboxes/metrics at the HTTP level, as E2B's OpenAPI spec has it: `sandbox_ids` comma-separated (explode
// false), at most 100 and unique; 200 is {sandboxes: {<id>: SandboxMetric}} with the latest sample of each, typed
// as the Python SDK's generated models parse it; another team's and unknown ids are left out; errors are {code,message}.
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";
import { burrowEnv, hasBurrowEnv, sdkOpts, TEMPLATE } from "./env.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

maybe("GET /sandboxes/metrics", () => {
  const mine: Sandbox[] = [];
  let theirs: Sandbox | undefined;
  let otherTeam: { id: string; key: string } | undefined;
  const api = () => keyedApi(burrowEnv().apiUrl, burrowEnv().apiKey);
  const get = (query: string) => api()("GET", `/sandboxes/metrics${query}`);

  beforeAll(async () => {
    const env = burrowEnv();
    const made = await api()("POST", "/burrow/v1/teams", { name: `mb-${randomBytes(3).toString("hex")}` });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    otherTeam = { id: made.json.teamID ?? made.json.team?.teamID, key: made.json.adminKey.key };
    const [a, b, c] = await Promise.all([
      Sandbox.create(TEMPLATE, { ...sdkOpts(), timeoutMs: 120_000 }),
      Sandbox.create(TEMPLATE, { ...sdkOpts(), timeoutMs: 120_000 }),
      Sandbox.create(TEMPLATE, { ...sdkOptions(env.apiUrl, env.sandboxUrl, otherTeam.key), timeoutMs: 120_000 }),
    ]);
    mine.push(a!, b!);
    theirs = c;
  });
  afterAll(async () => {
    const env = burrowEnv();
    await Promise.allSettled(mine.map((s) => s.kill()));
    if (theirs) await Sandbox.kill(theirs.sandboxId, sdkOptions(env.apiUrl, env.sandboxUrl, otherTeam!.key)).catch(() => undefined);
    if (otherTeam?.id) await api()("DELETE", `/burrow/v1/teams/${otherTeam.id}?force=true`);
  });

  test("the latest sample of each, keyed by id, typed as the spec's SandboxMetric", async () => {
    const ids = mine.map((s) => s.sandboxId);
    const res = await get(`?sandbox_ids=${ids.join(",")}`);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(Object.keys(res.json)).toEqual(["sandboxes"]);
    expect(Object.keys(res.json.sandboxes).sort()).toEqual([...ids].sort());
    for (const id of ids) {
      const m = res.json.sandboxes[id];
      expect(Object.keys(m).sort()).toEqual(
        ["cpuCount", "cpuUsedPct", "diskTotal", "diskUsed", "memCache", "memTotal", "memUsed", "timestamp", "timestampUnix"],
      );
      for (const k of ["cpuCount", "memUsed", "memTotal", "memCache", "diskUsed", "diskTotal", "timestampUnix"]) {
        expect(Number.isInteger(m[k]), `${k} = ${m[k]}`).toBe(true);
      }
      expect(typeof m.cpuUsedPct).toBe("number");
      expect(m.cpuCount).toBeGreaterThan(0);
      expect(m.memTotal).toBeGreaterThan(0);
      // RFC 3339 as the Python SDK's isoparse reads it, and the same instant as timestampUnix.
      expect(m.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
      expect(Math.floor(Date.parse(m.timestamp) / 1000)).toBe(m.timestampUnix);
      // The latest of what the single-sandbox route answers.
      const single = await api()("GET", `/sandboxes/${id}/metrics`);
      expect(single.status).toBe(200);
      expect(single.json.length).toBeGreaterThan(0);
      expect(m.timestampUnix).toBeGreaterThanOrEqual(single.json.at(-1).timestampUnix - 5);
    }
  });

  test("another team's and unknown ids are left out, not an error; <id>-<clientID> is read as <id>", async () => {
    const [a] = mine;
    const res = await get(`?sandbox_ids=${a!.sandboxId}-6532622b,${theirs!.sandboxId},nosuchsandbox0000000`);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(Object.keys(res.json.sandboxes)).toEqual([a!.sandboxId]);
    // The other team sees its own sandbox through the same route.
    const env = burrowEnv();
    const theirView = await keyedApi(env.apiUrl, otherTeam!.key)("GET", `/sandboxes/metrics?sandbox_ids=${theirs!.sandboxId},${a!.sandboxId}`);
    expect(theirView.status).toBe(200);
    expect(Object.keys(theirView.json.sandboxes)).toEqual([theirs!.sandboxId]);
    // An empty list answers an empty map.
    expect((await get("?sandbox_ids=")).json).toEqual({ sandboxes: {} });
  });

  test("limits and errors in E2B's shape", async () => {
    const hundred = Array.from({ length: 100 }, (_, i) => `x${i}`);
    expect((await get(`?sandbox_ids=${hundred.join(",")}`)).status).toBe(200);
    const tooMany = await get(`?sandbox_ids=${[...hundred, "x100"].join(",")}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.json).toEqual({ code: 400, message: "Too many sandboxes requested, maximum is 100" });
    const dup = await get(`?sandbox_ids=${mine[0]!.sandboxId},${mine[0]!.sandboxId}`);
    expect(dup.status).toBe(400);
    expect(dup.json).toMatchObject({ code: 400, message: expect.any(String) });
    const missing = await get("");
    expect(missing.status).toBe(400);
    expect(missing.json).toMatchObject({ code: 400, message: expect.any(String) });
    const noKey = await fetch(`${burrowEnv().apiUrl}/sandboxes/metrics?sandbox_ids=${mine[0]!.sandboxId}`);
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ code: 401, message: expect.any(String) });
  });
});
