// Volumes per team on a real store: the migration that gives every volume its team (its key's, else the default
// team's) keeps old rows and their mounts working, names become unique per team instead of per server, and the
// service finds a volume by name or id only within the caller's team.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { pino } from "pino";
import Database from "better-sqlite3";
import type { Orchestrator } from "@burrow/orchestrator";
import { openStore, type Store } from "../src/store/store.js";
import { DB_FILE } from "../src/store/database.js";
import { MIGRATIONS } from "../src/store/migrations.js";
import { SandboxStore, type SandboxRow } from "../src/store/sandboxes.js";
import { openTeamServices, type TeamServices } from "../src/teams/team-services.js";
import { UNLIMITED_QUOTAS } from "../src/teams/team-quotas.js";
import { VolumeService } from "../src/volumes/volume-service.js";

let dir: string;
let store: Store | undefined;
let teams: TeamServices | undefined;

const PER_TEAM = MIGRATIONS.findIndex((m) => m.includes("CREATE TABLE volumes_v2"));

function sandbox(id: string, apiKeyId: number | null): SandboxRow {
  const now = new Date();
  return {
    sandboxId: id, templateId: "tmpl_base", alias: "base", clientId: "c", metadata: {}, cpuCount: 1, memoryMB: 256, diskSizeMB: 100,
    startedAt: now, endAt: new Date(now.getTime() + 60_000), state: "running", envdVersion: "0.2.0", envdAccessToken: "t",
    allowInternetAccess: true, apiKeyId, mcpServers: null, lifecycle: { autoPause: false, autoPauseMemory: false, autoResume: false }, timeoutSec: 60, pauseKind: null,
  } as SandboxRow;
}

/** A burrow.db as the server before per-team names left it. */
function oldDatabase(fill: (db: Database.Database) => void): void {
  const old = new Database(join(dir, DB_FILE));
  old.pragma("foreign_keys = ON");
  for (const m of MIGRATIONS.slice(0, PER_TEAM)) old.exec(m);
  old.pragma(`user_version = ${PER_TEAM}`);
  fill(old);
  old.close();
}

function volumeService(t: TeamServices, s: Store): VolumeService {
  // Lookups never reach the orchestrator; creates and mounts are the e2e suite's (test/volumes/volume-teams.test.ts).
  return new VolumeService({
    store: s.volumes,
    orchestrator: {} as Orchestrator,
    stateDir: dir,
    defaultSizeMB: 100,
    teamOfKey: (id) => t.ownership.teamOfKeyId(id),
    defaultTeamId: t.defaultTeamId,
  });
}

function openTeams(s: Store): TeamServices {
  return openTeamServices({
    db: s.db,
    sandboxStore: s.sandboxes,
    resolveTemplate: () => undefined,
    quotaDefaults: UNLIMITED_QUOTAS,
    logger: pino({ level: "silent" }),
    configuredKey: null,
    createdKey: null,
  });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "burrow-volume-teams-"));
});
afterEach(() => {
  teams?.close();
  store?.close();
  teams = store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("volumes per team", () => {
  test("the upgrade gives each volume its key's team, keeps mounts, and makes names unique per team", () => {
    oldDatabase((db) => {
      db.prepare("INSERT INTO teams (team_id, name, quotas, created_at) VALUES ('T-default', 'default', '{}', 1), ('T-blue', 'blue', '{}', 2)").run();
      db.prepare(
        `INSERT INTO api_keys (id, hash, prefix, created_at, team_id, public_id, name, role)
         VALUES (1, 'h1', 'e2b_a', 1, 'T-default', 'p1', 'admin', 'instance_admin'), (2, 'h2', 'e2b_b', 2, 'T-blue', 'p2', 'blue', 'admin')`,
      ).run();
      db.prepare(
        `INSERT INTO volumes (volume_id, name, size_mb, token_salt, api_key_id, created_at)
         VALUES ('v-admin', 'data', 10, 's1', 1, 1), ('v-blue', 'logs', 10, 's2', 2, 2), ('v-nokey', 'old', 10, 's3', NULL, 3)`,
      ).run();
      new SandboxStore(db).insert(sandbox("sbx-1", 1));
      db.prepare("INSERT INTO sandbox_volumes (sandbox_id, volume_id, path, position) VALUES ('sbx-1', 'v-admin', '/data', 0)").run();
    });
    const s = (store = openStore(dir));
    expect(s.volumes.list().map((v) => [v.volumeId, v.teamId, v.name, v.apiKeyId])).toEqual([
      ["v-admin", "T-default", "data", 1],
      ["v-blue", "T-blue", "logs", 2],
      ["v-nokey", "T-default", "old", null],
    ]);
    expect(s.volumes.mountsOf("sbx-1")).toEqual([{ sandboxId: "sbx-1", volumeId: "v-admin", name: "data", path: "/data" }]);
    expect(s.volumes.mountersOf("v-admin")).toEqual(["sbx-1"]);
    expect(s.db.pragma("foreign_key_check")).toEqual([]);
    // The mount still holds its volume (the foreign key follows the rebuilt table), and goes with its sandbox.
    expect(() => s.volumes.delete("v-admin")).toThrow(/FOREIGN KEY/);
    // Blue may now have a "data" of its own, once.
    const row = { sizeMB: 10, tokenSalt: "s", apiKeyId: 2, createdAt: new Date() };
    s.volumes.insert({ ...row, volumeId: "v-blue-data", teamId: "T-blue", name: "data" });
    expect(() => s.volumes.insert({ ...row, volumeId: "v-blue-data2", teamId: "T-blue", name: "data" })).toThrow(/UNIQUE/);
    expect(s.volumes.getByName("T-blue", "data")?.volumeId).toBe("v-blue-data");
    expect(s.volumes.getByName("T-default", "data")?.volumeId).toBe("v-admin");
    s.sandboxes.delete("sbx-1");
    expect(s.volumes.mountsOf("sbx-1")).toEqual([]);
    expect(s.volumes.delete("v-admin")).toBe(true);
  });

  test("volumes from before any team go to the default team when the server starts", () => {
    oldDatabase((db) => {
      db.prepare("INSERT INTO volumes (volume_id, name, size_mb, token_salt, api_key_id, created_at) VALUES ('v-early', 'early', 10, 's', NULL, 1)").run();
    });
    const s = (store = openStore(dir));
    expect(s.volumes.get("v-early")?.teamId).toBe("");
    const t = (teams = openTeams(s));
    const volumes = volumeService(t, s);
    expect(s.volumes.get("v-early")?.teamId).toBe(t.defaultTeamId);
    expect(volumes.findVolume({ name: "early" }, { apiKeyId: null })?.volumeId).toBe("v-early");
  });

  test("the service finds volumes by name and id only within the caller's team", () => {
    const s = (store = openStore(dir));
    const t = (teams = openTeams(s));
    const red = t.store.createTeam("red");
    const blue = t.store.createTeam("blue");
    const redKey = t.store.addKey("e2b_red", { teamId: red.teamId, name: "r", role: "admin" });
    const blueKey = t.store.addKey("e2b_blue", { teamId: blue.teamId, name: "b", role: "admin" });
    const row = { sizeMB: 10, tokenSalt: "s", createdAt: new Date(), name: "data" };
    s.volumes.insert({ ...row, volumeId: "v-red", teamId: red.teamId, apiKeyId: redKey.id });
    s.volumes.insert({ ...row, volumeId: "v-blue", teamId: blue.teamId, apiKeyId: blueKey.id });
    const volumes = volumeService(t, s);
    const asRed = { apiKeyId: redKey.id };
    const asBlue = { apiKeyId: blueKey.id };
    expect(volumes.findVolume({ name: "data" }, asRed)?.volumeId).toBe("v-red");
    expect(volumes.findVolume({ name: "data" }, asBlue)?.volumeId).toBe("v-blue");
    expect(volumes.findVolume({ volumeId: "v-blue" }, asRed)).toBeUndefined();
    expect(volumes.findVolume({ name: "data" }, { apiKeyId: null })).toBeUndefined();
    expect(volumes.list(asRed).map((v) => v.volumeId)).toEqual(["v-red"]);
    expect(() => volumes.get("v-blue", asRed)).toThrow(/volume 'v-blue' not found/);
  });
});
