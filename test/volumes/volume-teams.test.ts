// Volumes per team on the global server with the official SDK: two teams each make a volume of the same name (409
// only within a team), each team's sandbox mounts its own by that name, and another team's volume is absent by id
// (get, delete, list) and by name (volumeMounts answer 404 as for a missing one).
import { randomBytes } from "node:crypto";
import { Sandbox, Volume } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const env = inject("burrow");
const admin = keyedApi(env.apiUrl, env.apiKey);
const started: Array<{ id: string; key: string }> = [];
const made: Array<{ id: string; key: string }> = [];

async function team(label: string): Promise<string> {
  const res = await admin("POST", "/burrow/v1/teams", { name: `vol-${label}-${randomBytes(3).toString("hex")}` });
  expect(res.status, JSON.stringify(res.json)).toBe(201);
  return (res.json as { adminKey: { key: string } }).adminKey.key;
}

async function volume(name: string, key: string): Promise<Volume> {
  const v = await Volume.create(name, sdkOptions(env.apiUrl, env.sandboxUrl, key));
  made.push({ id: v.volumeId, key });
  return v;
}

async function sandbox(key: string, mounts: Record<string, string>): Promise<Sandbox> {
  const s = await Sandbox.create("base", { ...sdkOptions(env.apiUrl, env.sandboxUrl, key), timeoutMs: 120_000, volumeMounts: mounts });
  started.push({ id: s.sandboxId, key });
  return s;
}

let keyA = "";
let keyB = "";

beforeAll(async () => {
  process.env["E2B_VOLUME_API_URL"] = env.apiUrl;
  keyA = await team("a");
  keyB = await team("b");
});

afterAll(async () => {
  await Promise.allSettled(started.map(({ id, key }) => Sandbox.kill(id, sdkOptions(env.apiUrl, env.sandboxUrl, key))));
  await Promise.allSettled(made.map(({ id, key }) => Volume.destroy(id, sdkOptions(env.apiUrl, env.sandboxUrl, key))));
});

describe("volumes per team", () => {
  it("two teams each have a volume of one name, and each team's sandbox mounts its own by that name", async () => {
    const name = `data-${randomBytes(3).toString("hex")}`;
    const a = await volume(name, keyA);
    const b = await volume(name, keyB);
    expect(b.volumeId).not.toBe(a.volumeId);
    // Within a team the name is still taken.
    await expect(Volume.create(name, sdkOptions(env.apiUrl, env.sandboxUrl, keyA))).rejects.toThrow(/exists already/);

    const inA = await sandbox(keyA, { "/mnt/data": name });
    await inA.commands.run("echo from-a > /mnt/data/owner", { user: "root" });
    const inB = await sandbox(keyB, { "/mnt/data": name });
    const seen = await inB.commands.run("ls -A /mnt/data", { user: "root" });
    expect(seen.stdout.trim()).toBe("");
    await inB.commands.run("echo from-b > /mnt/data/owner", { user: "root" });
    expect((await inA.commands.run("cat /mnt/data/owner")).stdout.trim()).toBe("from-a");
    const info = await keyedApi(env.apiUrl, keyB)("GET", `/sandboxes/${inB.sandboxId}`);
    expect(info.json.volumeMounts).toEqual([{ name, path: "/mnt/data" }]);
  });

  it("another team's volume is absent: get, delete and list by id, volumeMounts by name", async () => {
    const name = `only-a-${randomBytes(3).toString("hex")}`;
    const a = await volume(name, keyA);
    const asB = keyedApi(env.apiUrl, keyB);
    const get = await asB("GET", `/volumes/${a.volumeId}`);
    expect(get.status).toBe(404);
    expect(get.json.message).toBe(`volume '${a.volumeId}' not found`);
    expect((await asB("DELETE", `/volumes/${a.volumeId}`)).status).toBe(404);
    expect((await asB("GET", "/volumes")).json.map((v: { volumeID: string }) => v.volumeID)).not.toContain(a.volumeId);
    const create = await asB("POST", "/v2/sandboxes", { templateID: "base", timeout: 60, volumeMounts: [{ name, path: "/mnt/x" }] });
    expect(create.status).toBe(404);
    expect(create.json.message).toBe(`volume '${name}' not found`);
    // The admin of the default team does not see it either (volumes are per team, as on E2B).
    expect((await admin("GET", `/volumes/${a.volumeId}`)).status).toBe(404);
    expect((await keyedApi(env.apiUrl, keyA)("GET", `/volumes/${a.volumeId}`)).status).toBe(200);
  });
});
