// With a template builder the Template API (templates-api/) replaces the 501 stubs without route clashes,
// and its token-authorised upload route stays reachable without an API key.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { TemplateBuildService } from "../src/templates-api/index.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

const builder = {
  requestBuild: () => ({ templateID: "tplnew", buildID: "b1", names: ["mine"], tags: ["default"], aliases: ["mine"], public: false }),
  list: () => [],
} as unknown as TemplateBuildService;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ deps: { templates: builder } });
});
afterAll(async () => {
  await t.close();
});

it("serves the template API and keeps auth on it", async () => {
  const created = await t.api("/v3/templates", { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"mine"}' });
  expect(created.status).toBe(202);
  expect(await created.json()).toMatchObject({ templateID: "tplnew", buildID: "b1" });
  expect((await fetch(`${t.url}/v3/templates`, { method: "POST" })).status).toBe(401);
  expect(await (await t.api("/templates/aliases/base")).json()).toMatchObject({ templateID: "tplbase0000000000000" });
  // Sandbox routes are unaffected.
  expect((await t.api("/v2/sandboxes")).status).toBe(200);
});
