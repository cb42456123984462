// Triggers and tasks that name a team's template by its bare name, on the e2e server: team A builds `my-tpl`
// (stored in A's namespace); A's task with target {template: "my-tpl"} runs in a fresh sandbox of A's template, and A's
// rule on `on.templateId: "my-tpl"` is accepted, answered with the bare name, and fires for A's sandbox of it; a fresh
// sandbox a task of A's keeps is A's and counts against A's quotas. Team B, which has no template of that name, is still refused.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox, Template } from "e2b";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

maybe("triggers and tasks on a team's template by name", () => {
  const name = `my-tpl-${randomBytes(3).toString("hex")}`;
  const keys = { a: "", b: "" };
  const teamIds = { a: "", b: "" };
  let templateId = "";
  const triggers: string[] = [];
  const sandboxes: Sandbox[] = [];
  const api = (key: string) => keyedApi(burrowEnv().apiUrl, key);
  const conn = (key: string) => sdkOptions(burrowEnv().apiUrl, burrowEnv().sandboxUrl, key);

  beforeAll(async () => {
    const admin = api(burrowEnv().apiKey);
    for (const label of ["a", "b"] as const) {
      const res = await admin("POST", "/burrow/v1/teams", { name: `rules-${label}-${randomBytes(3).toString("hex")}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      keys[label] = (res.json as { adminKey: { key: string } }).adminKey.key;
      teamIds[label] = (res.json as { teamID: string }).teamID;
    }
    const template = Template().fromTemplate("base").runCmd("echo team-a > /tmp/owner", { user: "root" });
    templateId = (await Template.build(template, name, { ...conn(keys.a), onBuildLogs: () => undefined })).templateId;
  }, 600_000);

  afterAll(async () => {
    for (const id of triggers) await api(keys.a)("DELETE", `/burrow/v1/triggers/${id}`).catch(() => undefined);
    for (const s of sandboxes) await s.kill().catch(() => undefined);
    if (templateId) await api(keys.a)("DELETE", `/templates/${templateId}`).catch(() => undefined);
  });

  test("a task's target {template} runs in a fresh sandbox of the team's template", { timeout: 180_000 }, async () => {
    const a = api(keys.a);
    const task = await a("POST", "/burrow/v1/tasks", { target: { template: name }, cmd: "cat /tmp/owner", maxAttempts: 1 });
    expect(task.status, JSON.stringify(task.json)).toBe(201);
    let status = task.json;
    for (let i = 0; i < 3 && status.state !== "succeeded" && status.state !== "dead"; i++) {
      status = (await a("GET", `/burrow/v1/tasks/${task.json.id}?waitMs=60000`)).json;
    }
    expect(status).toMatchObject({ state: "succeeded", result: { exitCode: 0, stdout: "team-a\n" } });
    // B has no template of that name: the bare name reaches nobody's template of B's.
    expect((await api(keys.b)("POST", "/burrow/v1/tasks", { target: { template: name }, cmd: "true" })).status).toBe(403);
  });

  test("a kept fresh sandbox of a team's task belongs to the team", { timeout: 180_000 }, async () => {
    const a = api(keys.a);
    const task = await a("POST", "/burrow/v1/tasks", { target: { template: name }, cmd: "true", keepSandbox: true, maxAttempts: 1 });
    expect(task.status, JSON.stringify(task.json)).toBe(201);
    let status = task.json;
    for (let i = 0; i < 3 && status.state !== "succeeded" && status.state !== "dead"; i++) {
      status = (await a("GET", `/burrow/v1/tasks/${task.json.id}?waitMs=60000`)).json;
    }
    expect(status.state, JSON.stringify(status)).toBe("succeeded");
    const sandboxId: string = status.result.sandboxId;
    expect((await a("GET", `/sandboxes/${sandboxId}`)).status).toBe(200);
    const own = await api(burrowEnv().apiKey)("GET", "/v2/sandboxes");
    expect((own.json as Array<{ sandboxID: string }>).map((s) => s.sandboxID)).not.toContain(sandboxId);
    expect((await a("DELETE", `/sandboxes/${sandboxId}`)).status).toBe(204);
  });

  test("a task's fresh sandbox is admitted against the team's quotas", { timeout: 180_000 }, async () => {
    const a = api(keys.a);
    const admin = api(burrowEnv().apiKey);
    expect((await admin("PATCH", `/burrow/v1/teams/${teamIds.a}`, { quotas: { maxRunningSandboxes: 1 } })).status).toBe(200);
    const running = await Sandbox.create(name, { ...conn(keys.a), timeoutMs: 120_000 });
    sandboxes.push(running);
    try {
      const task = await a("POST", "/burrow/v1/tasks", { target: { template: name }, cmd: "true", maxAttempts: 1 });
      expect(task.status, JSON.stringify(task.json)).toBe(201);
      let status = task.json;
      for (let i = 0; i < 3 && status.state !== "succeeded" && status.state !== "dead"; i++) {
        status = (await a("GET", `/burrow/v1/tasks/${task.json.id}?waitMs=60000`)).json;
      }
      expect(status.state, JSON.stringify(status)).toBe("dead");
      expect(status.error).toContain("maxRunningSandboxes");
    } finally {
      await admin("PATCH", `/burrow/v1/teams/${teamIds.a}`, { quotas: { maxRunningSandboxes: null } });
      await running.kill();
    }
  });

  test("a rule on the team's template by name is accepted, shows the name, and fires for the team's sandbox", { timeout: 180_000 }, async () => {
    const a = api(keys.a);
    const rule = await a("POST", "/burrow/v1/triggers", {
      on: { templateId: name, category: "lifecycle", type: "created" },
      in: "source",
      cmd: "cat /tmp/owner",
      maxAttempts: 1,
    });
    expect(rule.status, JSON.stringify(rule.json)).toBe(201);
    triggers.push(rule.json.id);
    // Events carry template ids: the rule filters on the id of A's template of that name.
    expect(rule.json.on).toMatchObject({ templateId });
    const sandbox = await Sandbox.create(name, { ...conn(keys.a), timeoutMs: 120_000 });
    sandboxes.push(sandbox);
    let fired = 0;
    for (let i = 0; i < 120 && fired === 0; i++) {
      fired = (await a("GET", `/burrow/v1/triggers/${rule.json.id}`)).json.fired;
      if (fired === 0) await new Promise((r) => setTimeout(r, 500));
    }
    expect(fired).toBeGreaterThanOrEqual(1);
    expect((await api(keys.b)("POST", "/burrow/v1/triggers", { on: { templateId: name }, in: "source", cmd: "true" })).status).toBe(403);
  });
});
