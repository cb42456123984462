// Deleting a team on the e2e server: only the instance admin may; the default team never; a team that holds keys, a
// sandbox, a volume, a snapshot, a checkpoint, a trigger and a secret is refused (409 naming them) and keeps them all;
// with force its keys stop working, its sandbox is killed, its volume, snapshot, checkpoint, trigger and secret go, an
// audit record says so, and its name is free again. `burrow team delete` does the same from the operator's machine.
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, test } from "vitest";
import { Sandbox, Volume } from "e2b";
import { runBurrow } from "../cli/run-burrow.js";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

interface CreatedTeam {
  teamID: string;
  name: string;
  adminKey: { id: string; key: string };
}

maybe("team delete", () => {
  const api = (key: string) => keyedApi(burrowEnv().apiUrl, key);
  const conn = (key: string) => sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, key);
  const admin = () => api(burrowEnv().apiKey);
  const leftovers: Array<() => Promise<unknown>> = [];

  async function newTeam(label: string): Promise<CreatedTeam> {
    const res = await admin()("POST", "/burrow/v1/teams", { name: `del-${label}-${randomBytes(3).toString("hex")}` });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    return res.json as CreatedTeam;
  }

  afterAll(async () => {
    for (const undo of leftovers) await undo().catch(() => undefined);
  });

  test("refused while the team holds anything, then with force everything goes with it", { timeout: 180_000 }, async () => {
    process.env["E2B_VOLUME_API_URL"] = burrowEnv().apiUrl;
    const team = await newTeam("full");
    const t = api(team.adminKey.key);
    const sandbox = await Sandbox.create("base", { ...conn(team.adminKey.key), timeoutMs: 120_000 });
    leftovers.push(() => sandbox.kill());
    const volume = await Volume.create(`vol-${randomBytes(3).toString("hex")}`, conn(team.adminKey.key));
    leftovers.push(() => Volume.destroy(volume.volumeId, conn(team.adminKey.key)));
    const snapshot = await t("POST", `/sandboxes/${sandbox.sandboxId}/snapshots`, {});
    expect(snapshot.status).toBe(201);
    const checkpoint = await t("POST", `/burrow/v1/sandboxes/${sandbox.sandboxId}/checkpoints`, {});
    expect(checkpoint.status, JSON.stringify(checkpoint.json)).toBe(201);
    const trigger = await t("POST", "/burrow/v1/triggers", { on: { sandboxId: sandbox.sandboxId, category: "fs" }, in: "source", cmd: "true" });
    expect(trigger.status, JSON.stringify(trigger.json)).toBe(201);
    const secret = await t("POST", "/secrets", { name: `s-${randomBytes(3).toString("hex")}`, value: "hunter2" });
    expect(secret.status).toBe(201);
    const secretId: string = secret.json.secretID ?? secret.json.id;

    // Only the instance admin deletes teams, and never the default one.
    expect((await t("DELETE", `/burrow/v1/teams/${team.teamID}`)).status).toBe(403);
    const teams = (await admin()("GET", "/burrow/v1/teams")).json as Array<{ teamID: string; name: string }>;
    const defaultTeam = teams.find((x) => x.name === "default")!;
    const refusedDefault = await admin()("DELETE", `/burrow/v1/teams/${defaultTeam.teamID}?force=true`);
    expect(refusedDefault.status).toBe(409);
    expect(refusedDefault.json.message).toContain("default team");

    const refused = await admin()("DELETE", `/burrow/v1/teams/${team.teamID}`);
    expect(refused.status).toBe(409);
    expect(refused.json.message).toContain(`team "${team.name}" still has 1 key, 1 sandbox, 1 volume, 1 template, 1 checkpoint, 1 trigger, 1 secret`);
    expect(refused.json.message).toContain("force=true");
    // Nothing was touched.
    expect(await sandbox.isRunning()).toBe(true);
    expect((await t("GET", `/volumes/${volume.volumeId}`)).status).toBe(200);

    const deleted = await admin()("DELETE", `/burrow/v1/teams/${team.teamID}?force=true`);
    expect(deleted.status, JSON.stringify(deleted.json)).toBe(200);
    expect(deleted.json).toEqual({
      teamID: team.teamID,
      deleted: {
        keys: [team.adminKey.id],
        sandboxes: [sandbox.sandboxId],
        volumes: [volume.volumeId],
        templates: [snapshot.json.snapshotID],
        checkpoints: [checkpoint.json.checkpointID],
        triggers: [trigger.json.id],
        secrets: [secretId],
      },
    });
    expect((await t("GET", "/v2/sandboxes")).status).toBe(401);
    expect(await sandbox.isRunning()).toBe(false);
    // The volume's files went too: its own token finds nothing.
    await expect(volume.list("/")).rejects.toThrow();
    expect((await admin()("GET", `/burrow/v1/teams/${team.teamID}`)).status).toBe(404);
    expect(((await admin()("GET", "/burrow/v1/teams")).json as Array<{ teamID: string }>).map((x) => x.teamID)).not.toContain(team.teamID);
    expect((await admin()("DELETE", `/burrow/v1/teams/${team.teamID}`)).status).toBe(404);
    const audit = await admin()("GET", `/burrow/v1/audit?limit=1000&teamID=${team.teamID}`);
    const record = (audit.json as Array<{ action: string; resourceKind: string; resourceID: string; detail?: Record<string, unknown> }>).find(
      (e) => e.resourceKind === "team" && e.action === "delete",
    );
    expect(record).toMatchObject({ resourceID: team.teamID, detail: { name: team.name, force: true, sandboxes: [sandbox.sandboxId] } });
    // The name is free for a new team.
    const again = await admin()("POST", "/burrow/v1/teams", { name: team.name });
    expect(again.status).toBe(201);
    leftovers.push(() => admin()("DELETE", `/burrow/v1/teams/${again.json.teamID}?force=true`));
  });

  test("a team with nothing left (its keys revoked) is deleted without force", async () => {
    const team = await newTeam("empty");
    expect((await admin()("DELETE", `/api-keys/${team.adminKey.id}`)).status).toBe(204);
    const deleted = await admin()("DELETE", `/burrow/v1/teams/${team.teamID}`);
    expect(deleted.status, JSON.stringify(deleted.json)).toBe(200);
    expect(deleted.json.deleted).toEqual({ keys: [], sandboxes: [], volumes: [], templates: [], checkpoints: [], triggers: [], secrets: [] });
  });

  test("burrow team delete refuses a team that holds something, then deletes it with --force", async () => {
    const env = burrowEnv();
    const { E2B_API_KEY: _unset, ...base } = process.env;
    const operator = { ...base, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, BURROW_STATE_DIR: env.stateDir };
    const team = await newTeam("cli");
    const refused = await runBurrow(["team", "delete", team.name], { env: operator });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("still has 1 key");
    const deleted = await runBurrow(["team", "delete", team.name, "--force"], { env: operator });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`team ${team.teamID} deleted with 1 key\n`);
    const listed = await runBurrow(["team", "list"], { env: operator });
    expect(listed.stdout).not.toContain(team.teamID);
  });
});
