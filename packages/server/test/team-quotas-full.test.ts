// The per-team totals that are not per sandbox, on a real store: disk held by a team (its sandboxes, running or
// paused, and its volumes) against maxDiskMB, and snapshot storage charged to the team (its anchor key) rather than
// to the key that made the sandbox.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { pino } from "pino";
import { Code } from "@burrow/protocol";
import { openStore, type Store } from "../src/store/store.js";
import { openTeamServices, type TeamServices } from "../src/teams/team-services.js";
import { UNLIMITED_QUOTAS } from "../src/teams/team-quotas.js";
import { snapshotOwner } from "../src/admission/snapshot-quota.js";
import type { SandboxRow } from "../src/store/sandboxes.js";
import { DEFAULT_LIFECYCLE } from "../src/lifecycle/sandbox-lifecycle.js";

let dir: string;
let store: Store;
let teams: TeamServices;

function row(id: string, apiKeyId: number, diskSizeMB: number): SandboxRow {
  const now = new Date();
  return {
    sandboxId: id, templateId: "tmpl_base", alias: "base", clientId: "c", metadata: {}, cpuCount: 1, memoryMB: 256, diskSizeMB,
    startedAt: now, endAt: new Date(now.getTime() + 60_000), state: "running", envdVersion: "0.2.0", envdAccessToken: "t",
    allowInternetAccess: true, apiKeyId, mcpServers: null, lifecycle: DEFAULT_LIFECYCLE, timeoutSec: 60, pauseKind: null,
  } as SandboxRow;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "burrow-team-quotas-"));
  store = openStore(dir);
  teams = openTeamServices({
    db: store.db,
    sandboxStore: store.sandboxes,
    resolveTemplate: () => undefined,
    quotaDefaults: UNLIMITED_QUOTAS,
    logger: pino({ level: "silent" }),
    configuredKey: null,
    createdKey: null,
    volumes: () => store.volumes.list(),
  });
});
afterEach(() => {
  teams.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("team disk total", () => {
  test("running and paused sandboxes and volumes count; a resume adds nothing; other teams are apart", () => {
    const blue = teams.store.createTeam("blue");
    const red = teams.store.createTeam("red");
    const blueKey = teams.store.addKey("e2b_blue_key", { teamId: blue.teamId, name: "k", role: "admin" });
    const redKey = teams.store.addKey("e2b_red_key", { teamId: red.teamId, name: "k", role: "admin" });
    teams.store.setQuotas(blue.teamId, { maxDiskMB: 3000 });
    store.sandboxes.insert(row("sbx-run", blueKey.id, 1000));
    store.sandboxes.insert(row("sbx-paused", blueKey.id, 1000));
    store.sandboxes.setState("sbx-paused", "paused");
    store.sandboxes.insert(row("sbx-red", redKey.id, 5000));
    store.volumes.insert({ volumeId: "vol-blue", teamId: blue.teamId, name: "blue-data", sizeMB: 500, tokenSalt: "s", apiKeyId: blueKey.id, createdAt: new Date() });
    expect(teams.quotas.usage(blue.teamId)).toEqual({ runningSandboxes: 1, vcpu: 1, memoryMB: 256, diskMB: 2500 });

    const ask = { count: 1, cpuCount: 1, memoryMB: 256, diskMB: 1000, timeoutSec: 60, kind: "new" as const };
    let refusal: unknown;
    try {
      teams.quotas.admit(blue.teamId, ask);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toMatchObject({ code: Code.ResourceExhausted, reason: "team_quota_maxDiskMB" });
    expect(String((refusal as Error).message)).toMatch(/team quota maxDiskMB reached: .*hold 2500 MiB of disk of 3000 MiB \(asked for 1000 MiB more\)/);
    // The paused sandbox's disk is already counted: resuming it is not refused for disk.
    teams.quotas.admit(blue.teamId, { ...ask, kind: "resume" }).release();
    // A volume in flight holds its place: a second one does not fit beside it.
    const held = teams.quotas.admitVolume(blue.teamId, 400);
    expect(() => teams.quotas.admitVolume(blue.teamId, 400)).toThrow(/maxDiskMB.*2900 MiB of disk of 3000 MiB \(a volume takes 400 MiB\)/);
    held.release();
    teams.quotas.admitVolume(blue.teamId, 400).release();
    // Red has no total and holds more than blue's limit.
    teams.quotas.admit(red.teamId, { ...ask, diskMB: 10_000 }).release();
    // Ending a sandbox frees its disk.
    store.sandboxes.delete("sbx-run");
    teams.quotas.admit(blue.teamId, ask).release();
  });
});

describe("snapshot quota owner", () => {
  test("every key of a team is charged as the team's anchor key; without teams, the key itself", () => {
    const green = teams.store.createTeam("green");
    const first = teams.store.addKey("e2b_green_1", { teamId: green.teamId, name: "1", role: "admin" });
    const second = teams.store.addKey("e2b_green_2", { teamId: green.teamId, name: "2", role: "member" });
    const other = teams.store.addKey("e2b_other", { teamId: teams.store.createTeam("other").teamId, name: "o", role: "admin" });
    const anchor = (id: number) => teams.store.teamAnchorKey(id);
    expect(snapshotOwner(second.id, anchor)).toBe(`key:${first.id}`);
    expect(snapshotOwner(first.id, anchor)).toBe(`key:${first.id}`);
    expect(snapshotOwner(other.id, anchor)).toBe(`key:${other.id}`);
    expect(snapshotOwner(second.id)).toBe(`key:${second.id}`);
    expect(snapshotOwner(null, anchor)).toBe("key:none");
  });
});
