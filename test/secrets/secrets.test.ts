// E2B's secrets API against the real server with the official SDK's Secret class: the shapes, statuses and errors it
// expects, values never answered by any route, and values encrypted at rest (the database files never hold them).
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { Secret, SecretError, SecretNotFoundError } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

/** A value no other test or process could have written into the database by chance. */
const uniqueValue = () => `v-${randomBytes(24).toString("hex")}`;
const uniqueName = (stem: string) => `${stem}-${randomBytes(4).toString("hex")}`;

const created: string[] = [];
afterEach(async () => {
  for (const id of created.splice(0)) await Secret.destroy(id, sdkOpts()).catch(() => undefined);
});

async function create(name: string, value: string, metadata?: Record<string, string>) {
  const info = await Secret.create(name, value, { ...sdkOpts(), ...(metadata ? { metadata } : {}) });
  created.push(info.secretId);
  return info;
}

async function listAll(limit?: number) {
  const paginator = Secret.list({ ...sdkOpts(), ...(limit ? { limit } : {}) });
  const all = [];
  while (paginator.hasNext) all.push(...(await paginator.nextItems()));
  return all;
}

/** A raw REST call, for what the SDK cannot send (bad bodies) and to read answers as bytes. */
async function raw(method: string, path: string, body?: string) {
  const env = burrowEnv();
  const res = await fetch(`${env.apiUrl}${path}`, {
    method,
    headers: { "x-api-key": env.apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  return { status: res.status, text: await res.text() };
}

maybe("secrets (official SDK)", () => {
  test("create answers metadata at version 1, the name lower-cased, and get by id and by name agree", async () => {
    const name = uniqueName("OpenAI-Key");
    const info = await create(name, uniqueValue(), { team: "ml", env: "dev" });
    expect(info.secretId).toMatch(/^sec_/);
    expect(info.name).toBe(name.toLowerCase());
    expect(info.version).toBe(1);
    expect(info.metadata).toEqual({ team: "ml", env: "dev" });
    expect(info.createdAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(info.updatedAt.getTime()).toBe(info.createdAt.getTime());

    const byId = await Secret.getInfo(info.secretId, sdkOpts());
    const byName = await Secret.getInfo(name, sdkOpts());
    const byLowerName = await Secret.getInfo(name.toLowerCase(), sdkOpts());
    expect(byId).toEqual(info);
    expect(byName).toEqual(info);
    expect(byLowerName).toEqual(info);
    expect(await Secret.exists(info.secretId, sdkOpts())).toBe(true);
  });

  test("update stores the next version, keeps metadata unless sent, and moves updatedAt", async () => {
    const info = await create(uniqueName("upd"), uniqueValue(), { a: "1" });
    await new Promise((r) => setTimeout(r, 5));
    const v2 = await Secret.update(info.secretId, uniqueValue(), sdkOpts());
    expect(v2.version).toBe(2);
    expect(v2.metadata).toEqual({ a: "1" });
    expect(v2.createdAt).toEqual(info.createdAt);
    expect(v2.updatedAt.getTime()).toBeGreaterThan(info.updatedAt.getTime());
    const v3 = await Secret.update(info.name, uniqueValue(), { ...sdkOpts(), metadata: { b: "2" } });
    expect(v3.version).toBe(3);
    expect(v3.metadata).toEqual({ b: "2" });
    expect((await Secret.getInfo(info.secretId, sdkOpts())).version).toBe(3);
  });

  test("list pages through every secret with X-Next-Token", async () => {
    const names = [];
    for (let i = 0; i < 5; i++) names.push((await create(uniqueName(`list${i}`), uniqueValue())).name);
    const pages: string[][] = [];
    const paginator = Secret.list({ ...sdkOpts(), limit: 2 });
    while (paginator.hasNext) pages.push((await paginator.nextItems()).map((s) => s.name));
    expect(pages.slice(0, -1).every((p) => p.length === 2)).toBe(true);
    const listed = pages.flat();
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual(expect.arrayContaining(names));
    const all = await listAll();
    for (const name of names) expect(all.find((s) => s.name === name)?.version).toBe(1);
  });

  test("delete by id or name removes it; a second delete and unknown references are not found", async () => {
    const a = await create(uniqueName("del"), uniqueValue());
    const b = await create(uniqueName("del"), uniqueValue());
    expect(await Secret.destroy(a.secretId, sdkOpts())).toBe(true);
    expect(await Secret.destroy(b.name, sdkOpts())).toBe(true);
    expect(await Secret.destroy(a.secretId, sdkOpts())).toBe(false);
    expect(await Secret.exists(a.secretId, sdkOpts())).toBe(false);
    expect(await Secret.exists(b.name, sdkOpts())).toBe(false);
    await expect(Secret.getInfo("sec_doesnotexist", sdkOpts())).rejects.toBeInstanceOf(SecretNotFoundError);
    await expect(Secret.getInfo(uniqueName("nosuch"), sdkOpts())).rejects.toBeInstanceOf(SecretNotFoundError);
    await expect(Secret.update(a.secretId, "x", sdkOpts())).rejects.toBeInstanceOf(SecretNotFoundError);
    expect((await listAll()).some((s) => s.secretId === a.secretId || s.secretId === b.secretId)).toBe(false);
  });

  test("a duplicate name (in any case) is a 409 and leaves the first secret as it was", async () => {
    const name = uniqueName("dup");
    const first = await create(name, uniqueValue());
    const err = await Secret.create(name.toUpperCase(), uniqueValue(), sdkOpts()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretError);
    expect(String((err as Error).message)).toMatch(/already exists/);
    const r = await raw("POST", "/secrets", JSON.stringify({ name, value: "x" }));
    expect(r.status).toBe(409);
    expect(JSON.parse(r.text)).toMatchObject({ code: 409, message: expect.stringContaining(name) });
    expect(await Secret.getInfo(name, sdkOpts())).toEqual(first);
  });

  test("no answer of any route carries the value", async () => {
    const value = uniqueValue();
    const updated = uniqueValue();
    const info = await create(uniqueName("hidden"), value, { note: "n" });
    const answers = [
      await raw("GET", "/secrets"),
      await raw("GET", `/secrets/${info.secretId}`),
      await raw("GET", `/secrets/${info.name}`),
      await raw("POST", `/secrets/${info.secretId}`, JSON.stringify({ value: updated })),
      await raw("POST", "/secrets", JSON.stringify({ name: info.name, value })), // 409
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 409]);
    for (const a of answers) {
      expect(a.text).not.toContain(value);
      expect(a.text).not.toContain(updated);
      expect(a.text).not.toMatch(/"value"/);
    }
    const createAnswer = await raw("POST", "/secrets", JSON.stringify({ name: uniqueName("hidden2"), value }));
    expect(createAnswer.status).toBe(201);
    created.push((JSON.parse(createAnswer.text) as { secretID: string }).secretID);
    expect(createAnswer.text).not.toContain(value);
    expect(Object.keys(JSON.parse(createAnswer.text) as object).sort()).toEqual(["createdAt", "currentVersion", "metadata", "name", "secretID", "updatedAt"]);
  });

  test("values are encrypted at rest: neither burrow.db nor its WAL holds a value's bytes; the key file is 0600", async () => {
    const { stateDir } = burrowEnv();
    const value = uniqueValue();
    const info = await create(uniqueName("atrest"), value);
    const next = uniqueValue();
    await Secret.update(info.secretId, next, sdkOpts());
    const files = ["burrow.db", "burrow.db-wal"].map((f) => join(stateDir, f)).filter((f) => existsSync(f));
    expect(files.length).toBeGreaterThan(0);
    // The name is stored in the clear: finding it proves the files read are the ones written.
    const bytes = Buffer.concat(files.map((f) => readFileSync(f)));
    expect(bytes.includes(Buffer.from(info.name))).toBe(true);
    expect(bytes.includes(Buffer.from(value))).toBe(false);
    expect(bytes.includes(Buffer.from(next))).toBe(false);
    expect(statSync(join(stateDir, "secrets.key")).mode & 0o777).toBe(0o600);
  });

  test("bad input is a 400 in E2B's shape and creates nothing", async () => {
    const bad: Array<[string, string, string, RegExp]> = [
      ["POST", "/secrets", "{not json", /JSON|json/],
      ["POST", "/secrets", JSON.stringify({ value: "x" }), /name/],
      ["POST", "/secrets", JSON.stringify({ name: uniqueName("n") }), /value/],
      ["POST", "/secrets", JSON.stringify({ name: "", value: "x" }), /empty/],
      ["POST", "/secrets", JSON.stringify({ name: "a{b}", value: "x" }), /'\{'/],
      ["POST", "/secrets", JSON.stringify({ name: "sec_mine", value: "x" }), /reserved/],
      ["POST", "/secrets", JSON.stringify({ name: uniqueName("n"), value: "" }), /empty/],
      ["POST", "/secrets", JSON.stringify({ name: uniqueName("n"), value: 5 }), /value/],
      ["POST", "/secrets", JSON.stringify({ name: uniqueName("n"), value: "x", metadata: { k: 1 } }), /metadata/],
      ["GET", "/secrets?limit=0", "", /limit/],
      ["GET", "/secrets?nextToken=bogus", "", /nextToken/],
    ];
    const before = (await listAll()).length;
    for (const [method, path, body, message] of bad) {
      const r = await raw(method, path, body === "" ? undefined : body);
      expect(r.status, `${method} ${path} ${body}: ${r.text}`).toBe(400);
      const json = JSON.parse(r.text) as { code: number; message: string };
      expect(json.code).toBe(400);
      expect(json.message).toMatch(message);
    }
    const tooMuchMetadata = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]));
    await expect(Secret.create(uniqueName("meta"), "x", { ...sdkOpts(), metadata: tooMuchMetadata })).rejects.toThrow(/32 entries/);
    expect((await listAll()).length).toBe(before);
  });
});
