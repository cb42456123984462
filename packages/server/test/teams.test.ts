// Teams on a real store in a temporary state directory: the default team and instance admin at first start (and an
// upgrade of a database whose keys predate teams), revocation, quotas against concurrent admissions and the create
// rate, and ownership of sandboxes and templates.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { pino } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import Database from "better-sqlite3";
import { openStore, type Store } from "../src/store/store.js";
import { DB_FILE } from "../src/store/database.js";
import { MIGRATIONS } from "../src/store/migrations.js";
import { openTeamServices, type TeamServices } from "../src/teams/team-services.js";
import { resolveQuotaDefaults, parseQuotaPatch, TeamQuotas, UNLIMITED_QUOTAS } from "../src/teams/team-quotas.js";
import { callerOf } from "../src/teams/caller.js";
import type { SandboxRow } from "../src/store/sandboxes.js";
import { DEFAULT_LIFECYCLE } from "../src/lifecycle/sandbox-lifecycle.js";

let dir: string;
let store: Store;
let teams: TeamServices;

function open(createdKey: string | null, configuredKey: string | null = null): TeamServices {
  return openTeamServices({
    db: store.db,
    sandboxStore: store.sandboxes,
    resolveTemplate: (ref) => (ref === "base" || ref === "tmpl_base" ? { templateId: "tmpl_base", aliases: ["base"] } : ref === "mine" ? { templateId: "tmpl_mine", aliases: ["mine"] } : undefined),
    quotaDefaults: UNLIMITED_QUOTAS,
    logger: pino({ level: "silent" }),
    configuredKey,
    createdKey,
  });
}

function row(id: string, apiKeyId: number | null): SandboxRow {
  const now = new Date();
  return {
    sandboxId: id, templateId: "tmpl_base", alias: "base", clientId: "c", metadata: {}, cpuCount: 2, memoryMB: 512, diskSizeMB: 1024,
    startedAt: now, endAt: new Date(now.getTime() + 60_000), state: "running", envdVersion: "0.2.0", envdAccessToken: "t",
    allowInternetAccess: true, apiKeyId, mcpServers: null, lifecycle: DEFAULT_LIFECYCLE, timeoutSec: 60, pauseKind: null,
  } as SandboxRow;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "burrow-teams-"));
  store = openStore(dir);
});
afterEach(() => {
  teams?.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("teams and keys", () => {
  test("first start: the default team holds the existing key, which becomes the instance admin", () => {
    store.apiKeys.add("e2b_first");
    store.apiKeys.add("e2b_second");
    teams = open("e2b_first");
    const first = teams.store.verify("e2b_first")!;
    const second = teams.store.verify("e2b_second")!;
    expect(teams.store.teams().map((t) => t.name)).toEqual(["default"]);
    expect(first).toMatchObject({ teamId: teams.defaultTeamId, role: "instance_admin", valueLength: 9, suffix: "irst" });
    expect(second).toMatchObject({ teamId: teams.defaultTeamId, role: "member" });
    expect(first.publicId).not.toBe(second.publicId);
    // A second start keeps the same team and roles.
    teams.close();
    teams = open(null);
    expect(teams.store.teams()).toHaveLength(1);
    expect(teams.store.verify("e2b_first")!.role).toBe("instance_admin");
  });

  test("upgrade: keys of a database from before teams get public ids, the default team, and the oldest is the admin", () => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
    dir = mkdtempSync(join(tmpdir(), "burrow-teams-"));
    const teamsMigration = MIGRATIONS.findIndex((m) => m.includes("CREATE TABLE teams"));
    const old = new Database(join(dir, DB_FILE));
    for (const m of MIGRATIONS.slice(0, teamsMigration)) old.exec(m);
    old.pragma(`user_version = ${teamsMigration}`);
    old.prepare("INSERT INTO api_keys (hash, prefix, created_at) VALUES ('h1', 'e2b_aaaa', 1), ('h2', 'e2b_bbbb', 2)").run();
    old.close();
    store = openStore(dir);
    teams = open(null);
    const rows = store.db.prepare("SELECT id, public_id, team_id, role FROM api_keys ORDER BY id").all() as Array<{ public_id: string; team_id: string; role: string }>;
    expect(rows).toHaveLength(2);
    for (const r of rows) {
      expect(r.public_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(r.team_id).toBe(teams.defaultTeamId);
    }
    expect(rows[0]!.public_id).not.toBe(rows[1]!.public_id);
    expect(rows.map((r) => r.role)).toEqual(["instance_admin", "member"]);
  });

  test("a configured key (BURROW_API_KEY) is the instance admin", () => {
    store.apiKeys.add("e2b_generated");
    store.apiKeys.add("e2b_operator");
    teams = open(null, "e2b_operator");
    expect(teams.store.verify("e2b_operator")!.role).toBe("instance_admin");
  });

  test("a revoked key stops verifying at once, in both stores, and keeps its team for what it made", () => {
    store.apiKeys.add("e2b_admin");
    teams = open("e2b_admin");
    const team = teams.store.createTeam("blue");
    const key = teams.store.addKey("e2b_blue", { teamId: team.teamId, name: "k", role: "member" });
    expect(teams.store.verify("e2b_blue")?.id).toBe(key.id);
    store.sandboxes.insert(row("sbxblue", key.id));
    expect(teams.store.revokeKey(key.id)).toBe(true);
    expect(teams.store.revokeKey(key.id)).toBe(false);
    expect(teams.store.verify("e2b_blue")).toBeUndefined();
    expect(store.apiKeys.verify("e2b_blue")).toBeUndefined();
    expect(teams.ownership.teamOfSandbox(store.sandboxes.get("sbxblue")!)).toBe(team.teamId);
    expect(teams.store.keysOf(team.teamId)).toEqual([]);
  });

  test("a team's anchor key is its oldest key, the same for every key of the team", () => {
    store.apiKeys.add("e2b_admin");
    teams = open("e2b_admin");
    const admin = teams.store.verify("e2b_admin")!;
    const team = teams.store.createTeam("green");
    const first = teams.store.addKey("e2b_g1", { teamId: team.teamId, name: "1", role: "admin" });
    const second = teams.store.addKey("e2b_g2", { teamId: team.teamId, name: "2", role: "member" });
    teams.store.revokeKey(first.id);
    expect(teams.store.teamAnchorKey(second.id)).toBe(first.id);
    expect(teams.store.teamAnchorKey(first.id)).toBe(first.id);
    expect(teams.store.teamAnchorKey(admin.id)).toBe(admin.id);
    expect(teams.store.teamAnchorKey(9999)).toBeUndefined();
  });

  test("team names are unique", () => {
    teams = open(null);
    teams.store.createTeam("red");
    expect(() => teams.store.createTeam("red")).toThrow(expect.objectContaining({ code: Code.AlreadyExists }));
  });
});

describe("ownership", () => {
  test("sandboxes belong to their key's team, templates to the recorded team, shipped templates to everyone", () => {
    store.apiKeys.add("e2b_admin");
    teams = open("e2b_admin");
    const admin = callerOf(teams.store.verify("e2b_admin")!, "e2b_admin");
    const red = teams.store.createTeam("red");
    const redKey = teams.store.addKey("e2b_red", { teamId: red.teamId, name: "r", role: "admin" });
    const redCaller = callerOf(redKey, "e2b_red");
    store.sandboxes.insert(row("sbxadmin", admin.keyId));
    store.sandboxes.insert(row("sbxold", null));
    expect(() => teams.ownership.requireSandbox(redCaller, "sbxadmin")).toThrow(expect.objectContaining({ code: Code.NotFound }));
    expect(() => teams.ownership.requireSandbox(redCaller, "sbxold")).toThrow(expect.objectContaining({ code: Code.NotFound }));
    expect(teams.ownership.requireSandbox(admin, "sbxold").sandboxId).toBe("sbxold");
    // An unrecorded template that is not shipped is the default team's; a recorded one its team's.
    expect(teams.ownership.canSee(redCaller, "template", "mine")).toBe(false);
    teams.ownership.record("template", "tmpl_mine", red.teamId);
    expect(teams.ownership.canSee(redCaller, "template", "mine")).toBe(true);
    expect(teams.ownership.canSee(admin, "template", "mine")).toBe(false);
    expect(teams.ownership.canSee(redCaller, "template", "base")).toBe(true);
    expect(() => teams.ownership.require(redCaller, "template", "base", "write")).toThrow(expect.objectContaining({ code: Code.PermissionDenied }));
    expect(() => teams.ownership.require(admin, "template", "base", "write")).not.toThrow();
    // Bus subjects.
    expect(() => teams.ownership.requireSubject(redCaller, `team.${red.teamId}.x`, "publish")).not.toThrow();
    expect(() => teams.ownership.requireSubject(redCaller, `team.${admin.teamId}.x`, "publish")).toThrow(BurrowError);
    expect(() => teams.ownership.requireSubject(redCaller, "sbx.*.sbxadmin.>", "subscribe")).toThrow(BurrowError);
    expect(() => teams.ownership.requireSubject(admin, "sbx.>", "subscribe")).not.toThrow();
  });
});

describe("quotas", () => {
  test("concurrent admissions count against the limit until released; the message names quota and usage", () => {
    let running = 0;
    const quotas = new TeamQuotas({
      defaults: { ...UNLIMITED_QUOTAS, maxRunningSandboxes: 2 },
      overrides: () => ({}),
      usage: () => ({ runningSandboxes: running, vcpu: running * 2, memoryMB: running * 512, diskMB: 0 }),
      runningBuilds: () => 0,
    });
    const ask = { count: 1, cpuCount: 2, memoryMB: 512, diskMB: 0, timeoutSec: 60, kind: "new" as const };
    const first = quotas.admit("t", ask);
    const second = quotas.admit("t", ask);
    expect(() => quotas.admit("t", ask)).toThrow(/team quota maxRunningSandboxes reached: your team has 2 running sandboxes and may run 2 at once/);
    first.release();
    first.release(); // idempotent
    running = 1; // the first is in the store now
    expect(() => quotas.admit("t", ask)).toThrow(expect.objectContaining({ code: Code.ResourceExhausted }));
    second.release();
    quotas.admit("t", ask).release();
    // Nothing in flight any more: usage is the store's alone.
    expect(quotas.usage("t").runningSandboxes).toBe(1);
  });

  test("create rate over a sliding minute, per team; resumes do not count", () => {
    let now = 1_000_000;
    const quotas = new TeamQuotas({
      defaults: { ...UNLIMITED_QUOTAS, createsPerMinute: 2 },
      overrides: (t) => (t === "big" ? { createsPerMinute: 0 } : {}),
      usage: () => ({ runningSandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: 0 }),
      runningBuilds: () => 0,
      now: () => now,
    });
    const ask = { count: 1, cpuCount: 1, memoryMB: 1, diskMB: 0, timeoutSec: 1, kind: "new" as const };
    quotas.admit("t", ask).release();
    quotas.admit("t", ask).release();
    expect(() => quotas.admit("t", ask)).toThrow(/createsPerMinute/);
    quotas.admit("t", { ...ask, kind: "resume" }).release();
    for (let i = 0; i < 5; i++) quotas.admit("big", ask).release();
    now += 60_001;
    quotas.admit("t", ask).release();
  });

  test("defaults from the environment, patches validated", () => {
    expect(resolveQuotaDefaults({}, { BURROW_TEAM_MAX_VCPU: "8" }).maxVcpu).toBe(8);
    expect(() => resolveQuotaDefaults({}, { BURROW_TEAM_MAX_VCPU: "-1" })).toThrow(/BURROW_TEAM_MAX_VCPU/);
    expect(parseQuotaPatch({ maxVcpu: 4, maxMemoryMB: null }, { maxMemoryMB: 10 })).toEqual({ maxVcpu: 4 });
    expect(() => parseQuotaPatch({ maxCats: 1 }, {})).toThrow(/unknown quota "maxCats"/);
    expect(() => parseQuotaPatch({ maxVcpu: 1.5 }, {})).toThrow(/non-negative integer/);
  });
});
