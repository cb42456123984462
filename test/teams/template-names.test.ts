// Template names per team, with the official SDK on the e2e server: two teams and the default team each build a
// template of the same name, each one's sandboxes start from its own; lists and infos show the name without the
// team's namespace; another team's template stays invisible; the shipped templates stay everyone's; a name in a
// reserved namespace is refused.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox, Template } from "e2b";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { keyedApi } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

interface CreatedTeam {
  teamID: string;
  adminKey: { key: string };
}

function api(key: string) {
  return keyedApi(burrowEnv().apiUrl, key);
}

function conn(apiKey: string) {
  const env = burrowEnv();
  return { apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
}

maybe("template names per team", () => {
  const name = `same-${randomBytes(4).toString("hex")}`;
  const keys: Record<"a" | "b" | "admin", string> = { a: "", b: "", admin: "" };
  const built: { key: string; templateId: string }[] = [];
  const sandboxes: Sandbox[] = [];

  beforeAll(async () => {
    keys.admin = burrowEnv().apiKey;
    const admin = api(keys.admin);
    for (const label of ["a", "b"] as const) {
      const res = await admin("POST", "/burrow/v1/teams", { name: `names-${label}-${randomBytes(3).toString("hex")}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      keys[label] = (res.json as CreatedTeam).adminKey.key;
    }
  });

  afterAll(async () => {
    for (const s of sandboxes) await s.kill().catch(() => undefined);
    for (const { key, templateId } of built) await api(key)("DELETE", `/templates/${templateId}`).catch(() => undefined);
  });

  test("each team builds its own template of one name and starts sandboxes from it", { timeout: 600_000 }, async () => {
    for (const who of ["a", "b", "admin"] as const) {
      const template = Template().fromTemplate("base").runCmd(`echo ${who} > /tmp/owner`, { user: "root" });
      const info = await Template.build(template, name, { ...conn(keys[who]), onBuildLogs: () => undefined });
      built.push({ key: keys[who], templateId: info.templateId });
      if (who === "a") {
        // Until B builds its own, the name does not reach A's template for B.
        const before = await api(keys.b)("POST", "/v2/sandboxes", { templateID: name, timeout: 60 });
        expect(before.status).toBe(404);
        expect(before.json.message).toContain(name);
        expect(before.json.message).not.toMatch(/t-[0-9a-f]{12}\//);
      }
    }
    expect(new Set(built.map((b) => b.templateId)).size).toBe(3);
    for (const who of ["a", "b", "admin"] as const) {
      expect(await Template.exists(name, conn(keys[who]))).toBe(true);
      const sandbox = await Sandbox.create(name, { ...conn(keys[who]), timeoutMs: 120_000 });
      sandboxes.push(sandbox);
      expect((await sandbox.commands.run("cat /tmp/owner")).stdout.trim()).toBe(who);
      // The sandbox's info names the template as the team calls it.
      const info = await api(keys[who])("GET", `/sandboxes/${sandbox.sandboxId}`);
      expect(info.json).toMatchObject({ alias: name });
      await sandbox.kill();
    }
    const [a, b] = built;
    // Lists and infos show the bare name; each team sees its own template (and the shipped ones), not the others'.
    const listA = (await api(keys.a)("GET", "/templates")).json as { templateID: string; names: string[]; aliases: string[] }[];
    const mineA = listA.filter((t) => t.names.includes(name));
    expect(mineA.map((t) => t.templateID)).toEqual([a!.templateId]);
    expect(mineA[0]!.aliases).toEqual([name]);
    expect(listA.map((t) => t.templateID)).not.toContain(b!.templateId);
    expect(JSON.stringify(listA)).not.toMatch(/t-[0-9a-f]{12}\//);
    const detailB = await api(keys.b)("GET", `/templates/${b!.templateId}`);
    expect(detailB.json).toMatchObject({ templateID: b!.templateId, names: [name] });
    expect((await api(keys.b)("GET", `/templates/${a!.templateId}`)).status).toBe(404);
    expect((await api(keys.a)("GET", `/templates/aliases/${name}`)).json).toMatchObject({ templateID: a!.templateId });
    // A tag assigned by name lands on the team's own template.
    const tagged = await api(keys.b)("POST", "/templates/tags", { target: name, tags: ["stable"] });
    expect(tagged.status, JSON.stringify(tagged.json)).toBe(201);
    const tags = (await api(keys.b)("GET", `/templates/${b!.templateId}/tags`)).json as { tag: string }[];
    expect(tags.map((t) => t.tag)).toContain("stable");
    const fromTag = await Sandbox.create(`${name}:stable`, { ...conn(keys.b), timeoutMs: 60_000 });
    sandboxes.push(fromTag);
    expect((await fromTag.commands.run("cat /tmp/owner")).stdout.trim()).toBe("b");
    await fromTag.kill();
  });

  test("shipped templates stay everyone's; a name in a team namespace is refused", async () => {
    const sandbox = await Sandbox.create("base", { ...conn(keys.a), timeoutMs: 60_000 });
    sandboxes.push(sandbox);
    await sandbox.kill();
    for (const key of [keys.a, keys.admin]) {
      const res = await api(key)("POST", "/v3/templates", { name: `t-0123456789ab/${name}` });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 400, message: expect.stringContaining("reserved namespace") });
    }
  });
});
