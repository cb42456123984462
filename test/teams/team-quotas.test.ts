// Per-team quotas beyond the concurrency count, with the official SDK against a real server of its own (started with
// a 100 MiB snapshot quota): snapshot storage is the team's, shared by all its keys and apart from other teams; a
// paused sandbox's resume is refused (429) while its team is at its running limit and succeeds once a place is free;
// template builds in parallel are limited per team; the team's disk total counts paused sandboxes and refuses
// creates and volumes beyond it.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RateLimitError, Sandbox, SandboxError } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const QUOTA_MB = 100;
const instance = newTestInstance("teamq");
let server: ServerProcess | undefined;
const sandboxes: Sandbox[] = [];

interface TeamKeys {
  teamID: string;
  adminKey: { id: string; key: string };
}

function api(key: string) {
  return keyedApi(server!.url, key);
}

function opts(apiKey: string) {
  return sdkOptions(server!.url, server!.url, apiKey);
}

async function create(key: string): Promise<Sandbox> {
  const s = await Sandbox.create("base", { ...opts(key), timeoutMs: 300_000 });
  sandboxes.push(s);
  return s;
}

/** Bytes charged to each snapshot owner, from the server's Prometheus metrics. */
async function chargedBytes(): Promise<Map<string, number>> {
  const text = await (await fetch(`${server!.url}/metrics`)).text();
  return new Map([...text.matchAll(/^burrow_snapshot_storage_bytes\{owner="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

let admin: ReturnType<typeof api>;
let teamT: TeamKeys;
let teamU: TeamKeys;
let memberKeyT: string;

async function newTeam(label: string): Promise<TeamKeys> {
  const res = await admin("POST", "/burrow/v1/teams", { name: `${label}-${randomBytes(3).toString("hex")}` });
  expect(res.status, JSON.stringify(res.json)).toBe(201);
  return res.json as TeamKeys;
}

async function setQuotas(teamID: string, quotas: Record<string, number | null>): Promise<void> {
  const res = await admin("PATCH", `/burrow/v1/teams/${teamID}`, { quotas });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
}

beforeAll(async () => {
  const saved = process.env["BURROW_SNAPSHOT_QUOTA_MB"];
  process.env["BURROW_SNAPSHOT_QUOTA_MB"] = String(QUOTA_MB);
  try {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"]);
  } finally {
    if (saved === undefined) delete process.env["BURROW_SNAPSHOT_QUOTA_MB"];
    else process.env["BURROW_SNAPSHOT_QUOTA_MB"] = saved;
  }
  admin = api(server.apiKey);
  teamT = await newTeam("quota-t");
  teamU = await newTeam("quota-u");
  const member = await api(teamT.adminKey.key)("POST", "/api-keys", { name: "member" });
  expect(member.status).toBe(201);
  memberKeyT = member.json.key;
}, 180_000);

afterAll(async () => {
  for (const s of sandboxes) await s.kill().catch(() => undefined);
  if (server) await stopServerProcess(server, "SIGTERM");
  burrowDown(instance);
  const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
  rmSync(instance.stateDir, { recursive: true, force: true });
  expect(tables).not.toContain(`burrow_${instance.instance}`);
}, 120_000);

describe("team quotas", () => {
  it("snapshot storage is charged to the team: one key's snapshots fill it for every key of the team, not for another team", { timeout: 300_000 }, async () => {
    const byMember = await create(memberKeyT);
    const byAdmin = await create(teamT.adminKey.key);
    const other = await create(teamU.adminKey.key);
    for (const s of [byMember, byAdmin, other]) await s.commands.run("head -c 40M /dev/urandom > /home/user/blob && sync");
    await byMember.createSnapshot();
    await byAdmin.createSnapshot();
    const charged = await chargedBytes();
    // Two keys of one team, one owner.
    expect(charged.size).toBe(1);
    const [owner, bytes] = [...charged][0]!;
    expect(bytes).toBeGreaterThanOrEqual(80 * 2 ** 20);
    const refused = await byMember.createSnapshot().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SandboxError);
    expect((refused as Error).message).toMatch(new RegExp(`^507: snapshot storage quota of ${owner}: .* exceeds the ${QUOTA_MB} MiB limit`));
    // Team U has its own storage.
    await other.createSnapshot();
    const after = await chargedBytes();
    expect(after.size).toBe(2);
    expect(after.get(owner)).toBe(bytes);
    for (const s of [byMember, byAdmin, other]) await s.kill();
  });

  it("a paused sandbox's resume is refused with 429 while the team is at its running limit, and succeeds once one ends", { timeout: 300_000 }, async () => {
    await setQuotas(teamT.teamID, { maxRunningSandboxes: 1 });
    const t = api(teamT.adminKey.key);
    const paused = await create(teamT.adminKey.key);
    await paused.files.write("/home/user/kept.txt", "still here");
    expect(await paused.pause()).toBe(true);
    // Paused sandboxes do not count as running: another one starts.
    const running = await create(memberKeyT);
    const refused = await t("POST", `/sandboxes/${paused.sandboxId}/connect`, { timeout: 60 });
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ code: 429, message: expect.stringMatching(/team quota maxRunningSandboxes reached: your team has 1 running sandboxes and may run 1 at once/) });
    await expect(Sandbox.connect(paused.sandboxId, opts(teamT.adminKey.key))).rejects.toBeInstanceOf(RateLimitError);
    // Still paused, nothing lost.
    expect((await t("GET", `/sandboxes/${paused.sandboxId}`)).json.state).toBe("paused");
    await running.kill();
    const resumed = await Sandbox.connect(paused.sandboxId, { ...opts(teamT.adminKey.key), timeoutMs: 60_000 });
    expect(await resumed.files.read("/home/user/kept.txt")).toBe("still here");
    await resumed.kill();
    await setQuotas(teamT.teamID, { maxRunningSandboxes: null });
  });

  it("template builds in parallel are limited per team", { timeout: 300_000 }, async () => {
    await setQuotas(teamT.teamID, { maxConcurrentBuilds: 1 });
    const t = api(teamT.adminKey.key);
    const u = api(teamU.adminKey.key);
    const request = async (call: typeof t) => {
      const res = await call("POST", "/v3/templates", { name: `qb-${randomBytes(4).toString("hex")}`, cpuCount: 1, memoryMB: 512 });
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      return res.json as { templateID: string; buildID: string };
    };
    const start = (call: typeof t, b: { templateID: string; buildID: string }, seconds: number) =>
      call("POST", `/v2/templates/${b.templateID}/builds/${b.buildID}`, {
        fromTemplate: "base",
        steps: [{ type: "RUN", args: [`sleep ${seconds}`], force: true }],
        force: true,
      });
    const first = await request(t);
    const second = await request(t);
    expect((await start(t, first, 15)).status).toBe(202);
    const refused = await start(t, second, 1);
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ code: 429, message: expect.stringMatching(/team quota maxConcurrentBuilds reached: your team has 1 template builds running and may run 1 at once/) });
    // Another team builds meanwhile.
    const others = await request(u);
    expect((await start(u, others, 1)).status).toBe(202);
    for (let i = 0; ; i++) {
      const status = await t("GET", `/templates/${first.templateID}/builds/${first.buildID}/status`);
      expect(status.status).toBe(200);
      if (status.json.status !== "building" && status.json.status !== "waiting") {
        expect(status.json.status).toBe("ready");
        break;
      }
      expect(i).toBeLessThan(600);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect((await start(t, second, 1)).status).toBe(202);
    await setQuotas(teamT.teamID, { maxConcurrentBuilds: null });
  });

  it("the team's disk total counts paused sandboxes and refuses a create or a volume beyond it", { timeout: 300_000 }, async () => {
    const t = api(teamT.adminKey.key);
    const paused = await create(teamT.adminKey.key);
    const diskMB = (await t("GET", `/sandboxes/${paused.sandboxId}`)).json.diskSizeMB as number;
    expect(diskMB).toBeGreaterThan(0);
    expect(await paused.pause()).toBe(true);
    await setQuotas(teamT.teamID, { maxDiskMB: diskMB });
    const refused = await t("POST", "/v2/sandboxes", { templateID: "base", timeout: 60 });
    expect(refused.status).toBe(429);
    expect(refused.json.message).toMatch(new RegExp(`team quota maxDiskMB reached: your team's sandboxes and volumes hold ${diskMB} MiB of disk of ${diskMB} MiB`));
    const volume = await t("POST", "/volumes", { name: `qv-${randomBytes(3).toString("hex")}` });
    expect(volume.status).toBe(429);
    expect(volume.json.message).toContain("maxDiskMB");
    // Team U is not held by T's total.
    const elsewhere = await create(teamU.adminKey.key);
    await elsewhere.kill();
    await Sandbox.kill(paused.sandboxId, opts(teamT.adminKey.key));
    const fits = await create(teamT.adminKey.key);
    await fits.kill();
    await setQuotas(teamT.teamID, { maxDiskMB: null });
  });
});
