// Sandbox.list (SDK test api/list): filters by metadata, state, template and startedAfter, ordering, and
// pagination with limit + nextToken across several pages.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts, TEMPLATE } from "./env.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

maybe("list", () => {
  const marker = `l${Date.now()}${Math.random().toString(36).slice(2, 8)}`;
  const created: Sandbox[] = [];
  let beforeAll_: Date;

  beforeAll(async () => {
    beforeAll_ = new Date(Date.now() - 1_000);
    // Created one after another so that their start times are ordered.
    for (let i = 0; i < 3; i++) {
      created.push(await Sandbox.create(TEMPLATE, { ...sdkOpts(), metadata: { marker, index: String(i) }, timeoutMs: 120_000 }));
    }
  });
  afterAll(async () => {
    await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
  });

  const ids = () => created.map((s) => s.sandboxId);
  const list = (opts: Parameters<typeof Sandbox.list>[0] = {}) =>
    Sandbox.list({ ...sdkOpts(), ...opts, query: { metadata: { marker }, ...opts.query } });

  test("metadata filter, newest first, listed fields", async () => {
    const items = await list().nextItems();
    expect(items.map((s) => s.sandboxId)).toEqual([...ids()].reverse());
    const first = items.find((s) => s.sandboxId === created[0]!.sandboxId)!;
    expect(first).toMatchObject({ state: "running", name: TEMPLATE, metadata: { marker, index: "0" } });
    expect(first.cpuCount).toBeGreaterThan(0);
    expect(first.memoryMB).toBeGreaterThan(0);
    expect(first.startedAt).toBeInstanceOf(Date);
    expect(first.endAt.getTime()).toBeGreaterThan(first.startedAt.getTime());
    const one = await list({ query: { metadata: { marker, index: "1" } } }).nextItems();
    expect(one.map((s) => s.sandboxId)).toEqual([created[1]!.sandboxId]);
    expect(await list({ query: { metadata: { marker, index: "nope" } } }).nextItems()).toEqual([]);
  });

  test("order asc", async () => {
    expect((await list({ order: "asc" }).nextItems()).map((s) => s.sandboxId)).toEqual(ids());
  });

  test("state filter", async () => {
    expect((await list({ query: { state: ["running"] } }).nextItems()).length).toBe(3);
    expect(await list({ query: { state: ["paused"] } }).nextItems()).toEqual([]);
    expect((await list({ query: { state: ["running", "paused"] } }).nextItems()).length).toBe(3);
  });

  test("template filter by alias and by id", async () => {
    const info = await created[0]!.getInfo();
    expect((await list({ query: { template: TEMPLATE } }).nextItems()).length).toBe(3);
    expect((await list({ query: { template: info.templateId } }).nextItems()).length).toBe(3);
    expect(await list({ query: { template: "some-other-template" } }).nextItems()).toEqual([]);
  });

  test("startedAfter filter is inclusive", async () => {
    expect((await list({ query: { startedAfter: beforeAll_ } }).nextItems()).length).toBe(3);
    expect(await list({ query: { startedAfter: new Date(Date.now() + 60_000) } }).nextItems()).toEqual([]);
    const third = (await created[2]!.getInfo()).startedAt;
    expect((await list({ query: { startedAfter: third } }).nextItems()).map((s) => s.sandboxId)).toEqual([created[2]!.sandboxId]);
  });

  test("pagination: limit 1 across three pages with the paginator", async () => {
    const paginator = list({ limit: 1 });
    const pages: string[][] = [];
    while (paginator.hasNext) pages.push((await paginator.nextItems()).map((s) => s.sandboxId));
    expect(pages).toEqual([...ids()].reverse().map((id) => [id]));
    await expect(paginator.nextItems()).rejects.toThrow();
  });

  test("pagination: limit 2 with an explicit nextToken, in both orders", async () => {
    const first = list({ limit: 2, order: "asc" });
    expect((await first.nextItems()).map((s) => s.sandboxId)).toEqual(ids().slice(0, 2));
    expect(first.hasNext).toBe(true);
    const token = first.nextToken!;
    expect(token).toBeTruthy();
    const resumed = list({ limit: 2, order: "asc", nextToken: token });
    expect((await resumed.nextItems()).map((s) => s.sandboxId)).toEqual(ids().slice(2));
    expect(resumed.hasNext).toBe(false);
  });

  test("raw wire: X-Next-Token, X-Total-Running, bad tokens and limits", async () => {
    const env = burrowEnv();
    const q = (params: string) =>
      fetch(`${env.apiUrl}/v2/sandboxes?${params}&metadata=${encodeURIComponent(`marker=${marker}`)}`, {
        headers: { "X-API-KEY": env.apiKey },
      });
    const res = await q("limit=2");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-next-token")).toBeTruthy();
    expect(res.headers.get("x-total-running")).toBe("3");
    expect(((await res.json()) as unknown[]).length).toBe(2);
    const last = await q(`limit=2&nextToken=${encodeURIComponent(res.headers.get("x-next-token")!)}`);
    expect(last.headers.get("x-next-token")).toBeNull();
    expect(((await last.json()) as unknown[]).length).toBe(1);
    const raw = (params: string) => fetch(`${env.apiUrl}/v2/sandboxes?${params}`, { headers: { "X-API-KEY": env.apiKey } });
    for (const bad of ["metadata=novalue", "metadata=a%3Db%3Dc", "metadata=%25E0%25A4%25A"]) {
      const r = await raw(bad);
      expect(r.status, bad).toBe(400);
      expect(await r.json()).toMatchObject({ code: 400, message: expect.stringMatching(/metadata/) });
    }
    for (const bad of ["nextToken=garbage!!", "limit=0", "limit=101", "limit=abc", "state=sleeping", "startedAfter=yesterday"]) {
      const r = await q(bad);
      expect(r.status, bad).toBe(400);
      const body = (await r.json()) as { code: number; message: string };
      expect(body.code, bad).toBe(400);
      expect(typeof body.message).toBe("string");
    }
  });

  test("killed sandboxes leave the list", async () => {
    const extra = await Sandbox.create(TEMPLATE, { ...sdkOpts(), metadata: { marker: `${marker}x` } });
    try {
      const query = { metadata: { marker: `${marker}x` } };
      expect((await Sandbox.list({ ...sdkOpts(), query }).nextItems()).length).toBe(1);
      await extra.kill();
      expect(await Sandbox.list({ ...sdkOpts(), query }).nextItems()).toEqual([]);
    } finally {
      await extra.kill().catch(() => undefined);
    }
  });
});
