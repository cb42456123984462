// Build ids and tags as E2B has them, against a real store and real (ENV-only, so sandbox-free) builds: build ids
// are UUIDs, pre-UUID builds stored in a state directory keep working under their old ids and show a stable UUID
// on the wire, `latest` is an ordinary tag, `name:<build id>` names a build and a tag cannot be a UUID.
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { resolveOrchestratorConfig } from "../src/config.js";
import { silentLogger } from "../src/logger.js";
import type { SandboxHost } from "../src/sandbox-host.js";
import { findBuildId, isUuid, newBuildId, wireBuildId } from "../src/templates/build-ids.js";
import { TemplateBuilder } from "../src/templates/builder/template-builder.js";
import { checkTag, parseTemplateName } from "../src/templates/builder/template-names.js";
import { TemplateStore, type TemplateManifest } from "../src/templates/template-store.js";

/** Canonical lowercase UUID, what Python's str(UUID(x)) gives back. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LIMITS = { cpuCount: 1, memoryMB: 256, diskMB: 512, pids: 128 };

let stateDir: string;
let store: TemplateStore;
let builder: TemplateBuilder;

/** A manifest as Burrow wrote them before build ids were UUIDs: 20-character [a-z0-9] ids. */
const legacy: TemplateManifest = {
  templateId: "oldtpl0000000000000a",
  aliases: ["old"],
  layers: ["parent-layer"],
  defaults: LIMITS,
  createdAt: "2026-01-01T00:00:00.000Z",
  runtime: { env: { V: "2" }, user: "user" },
  buildId: "b2oldbuild000000000b",
  builds: {
    b1oldbuild000000000a: { layers: ["parent-layer"], runtime: { env: { V: "1" }, user: "user" }, createdAt: "2026-01-01T00:00:00.000Z" },
    b2oldbuild000000000b: { layers: ["parent-layer"], runtime: { env: { V: "2" }, user: "user" }, createdAt: "2026-01-02T00:00:00.000Z" },
  },
  tags: { default: "b2oldbuild000000000b", v1: "b1oldbuild000000000a", latest: "b1oldbuild000000000a" },
};

const envSpec = (value: string) => ({ fromTemplate: "parent", steps: [{ type: "ENV", args: ["V", value] }] });

beforeEach(async () => {
  stateDir = await mkdtemp("/var/tmp/burrow-build-ids-");
  mkdirSync(join(stateDir, "templates"), { recursive: true });
  mkdirSync(join(stateDir, "layers", "parent-layer"), { recursive: true });
  const parent: TemplateManifest = { templateId: "parent", aliases: ["parent"], layers: ["parent-layer"], defaults: LIMITS, createdAt: new Date().toISOString() };
  writeFileSync(join(stateDir, "templates", "parent.json"), JSON.stringify(parent));
  writeFileSync(join(stateDir, "templates", `${legacy.templateId}.json`), JSON.stringify(legacy));
  store = new TemplateStore(join(stateDir, "templates"), join(stateDir, "layers"));
  await store.load();
  // ENV-only builds never reach the sandbox host.
  builder = new TemplateBuilder({ store, host: {} as SandboxHost, config: resolveOrchestratorConfig({ stateDir }), logger: silentLogger });
});

afterEach(async () => {
  await builder.close();
  await rm(stateDir, { recursive: true, force: true });
});

async function build(name: string, value: string, tags?: string[]) {
  const requested = builder.requestBuild({ name, tags, cpuCount: LIMITS.cpuCount, memoryMB: LIMITS.memoryMB });
  builder.startBuild(requested.templateID, requested.buildID, envSpec(value));
  const done = await builder.waitForBuild(requested.buildID);
  expect(done.status).toBe("ready");
  return requested;
}

describe("build ids", () => {
  it("are random UUIDs in canonical form; a legacy id maps to one stable name-based UUID", () => {
    const ids = new Set(Array.from({ length: 50 }, () => newBuildId()));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const wire = wireBuildId("b1oldbuild000000000a");
    // Version 5, RFC variant; the same on every call (and so across restarts), different per id.
    expect(wire).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(wireBuildId("b1oldbuild000000000a")).toBe(wire);
    expect(wireBuildId("b2oldbuild000000000b")).not.toBe(wire);
    const uuid = newBuildId();
    expect(wireBuildId(uuid.toUpperCase())).toBe(uuid);
    expect(findBuildId(["b1oldbuild000000000a", uuid], wire)).toBe("b1oldbuild000000000a");
    expect(findBuildId(["b1oldbuild000000000a", uuid], uuid.toUpperCase())).toBe(uuid);
    // A legacy id itself is not a build reference on the wire (E2B resolves only UUIDs after the ':').
    expect(findBuildId(["b1oldbuild000000000a"], "b1oldbuild000000000a")).toBeUndefined();
    expect(isUuid("not-a-uuid")).toBe(false);
  });

  it("every build id the builder answers with is a canonical UUID, and finds its build in any letter case", async () => {
    const requested = await build("fresh", "1", ["v1"]);
    expect(requested.buildID).toMatch(CANONICAL_UUID);
    const status = builder.status(requested.templateID, requested.buildID.toUpperCase());
    expect(status.buildID).toBe(requested.buildID);
    expect(status.status).toBe("ready");
    for (const tag of builder.tagsOf("fresh")) expect(tag.buildID).toBe(requested.buildID);
    const assigned = await builder.assignTags("fresh:v1", ["prod", "prod"]);
    expect(assigned).toEqual({ buildID: requested.buildID, tags: ["prod"] });
    const listed = builder.templateBuilds(requested.templateID);
    expect(listed.builds.map((b) => b.buildID)).toEqual([requested.buildID]);
    expect(listed.builds[0]).toMatchObject({ status: "ready", cpuCount: LIMITS.cpuCount, memoryMB: LIMITS.memoryMB });
    expect(builder.list().find((t) => t.templateId === requested.templateID)?.buildId).toBe(requested.buildID);
    // The stored manifest keeps the id as given, with the limits of the build.
    const stored = JSON.parse(await readFile(join(stateDir, "templates", `${requested.templateID}.json`), "utf8")) as TemplateManifest;
    expect(Object.keys(stored.builds ?? {})).toEqual([requested.buildID]);
    expect(stored.builds?.[requested.buildID]?.limits).toMatchObject({ cpuCount: LIMITS.cpuCount, memoryMB: LIMITS.memoryMB });
  });

  it("a state directory's pre-UUID builds keep resolving by name and tag, and show as UUIDs", async () => {
    const v1 = wireBuildId("b1oldbuild000000000a");
    const v2 = wireBuildId("b2oldbuild000000000b");
    expect(store.resolve("old")?.runtime?.env).toEqual({ V: "2" });
    expect(store.resolve("old:v1")?.runtime?.env).toEqual({ V: "1" });
    expect(store.resolve("old:default")?.buildId).toBe("b2oldbuild000000000b");
    // The build id shown on the wire names the build too.
    expect(store.resolve(`old:${v1}`)?.runtime?.env).toEqual({ V: "1" });
    expect(store.resolve(`${legacy.templateId}:${v2.toUpperCase()}`)?.buildId).toBe("b2oldbuild000000000b");
    const tags = Object.fromEntries(builder.tagsOf("old").map((t) => [t.tag, t.buildID]));
    expect(tags).toEqual({ default: v2, v1, latest: v1 });
    expect(await builder.assignTags("old:v1", ["stable"])).toEqual({ buildID: v1, tags: ["stable"] });
    expect(await builder.assignTags(`old:${v2}`, ["two"])).toEqual({ buildID: v2, tags: ["two"] });

    // A new build of the old template: a UUID id beside the old ones, which stay as stored.
    const v3 = await build("old", "3");
    expect(v3.templateID).toBe(legacy.templateId);
    expect(store.resolve("old")?.runtime?.env).toEqual({ V: "3" });
    expect(store.resolve("old:two")?.runtime?.env).toEqual({ V: "2" });
    const stored = JSON.parse(await readFile(join(stateDir, "templates", `${legacy.templateId}.json`), "utf8")) as TemplateManifest;
    expect(Object.keys(stored.builds ?? {}).sort()).toEqual(["b1oldbuild000000000a", "b2oldbuild000000000b", v3.buildID].sort());
    expect(stored.tags).toMatchObject({ v1: "b1oldbuild000000000a", stable: "b1oldbuild000000000a", two: "b2oldbuild000000000b", default: v3.buildID });
    // Newest first; every id a UUID; old builds report the template's limits.
    const listed = builder.templateBuilds("old");
    expect(listed.builds.map((b) => b.buildID)).toEqual([v3.buildID, v2, v1]);
    for (const b of listed.builds) expect(b.buildID).toMatch(CANONICAL_UUID);
    expect(listed).toMatchObject({ templateID: legacy.templateId, aliases: ["old"], names: ["old"] });
  });
});

describe("the builds of a template", () => {
  it("include a first build not yet published, and are not found once the template is deleted", async () => {
    const requested = builder.requestBuild({ name: "pending", cpuCount: 1, memoryMB: 300 });
    const waiting = builder.templateBuilds("pending");
    expect(waiting).toMatchObject({ templateID: requested.templateID, aliases: ["pending"] });
    expect(waiting.builds).toEqual([
      { buildID: requested.buildID, status: "waiting", createdAt: expect.any(String), updatedAt: expect.any(String), cpuCount: 1, memoryMB: 300 },
    ]);
    expect(builder.templateBuilds(requested.templateID).builds).toHaveLength(1);
    builder.startBuild(requested.templateID, requested.buildID, envSpec("1"));
    await builder.waitForBuild(requested.buildID);
    const done = builder.templateBuilds(requested.templateID).builds[0];
    expect(done).toMatchObject({ buildID: requested.buildID, status: "ready", finishedAt: expect.any(String) });
    expect(await builder.deleteTemplate("pending")).toBe(true);
    expect(() => builder.templateBuilds(requested.templateID)).toThrow(/not found/);
    expect(() => builder.templateBuilds("pending")).toThrow(/not found/);
  });
});

describe("tags", () => {
  it("keep `latest` as an ordinary tag: never rewritten, unresolved until assigned", async () => {
    const first = await build("lat", "1", ["v1"]);
    // The first build also gets the default tag (the bare name must resolve); latest is not a synonym of it.
    expect(Object.keys(store.resolve("lat")?.tags ?? {}).sort()).toEqual(["default", "v1"]);
    expect(store.resolve("lat:latest")).toBeUndefined();
    const latest = builder.requestBuild({ name: "lat:latest" });
    expect(latest.tags).toEqual(["latest"]);
    builder.startBuild(latest.templateID, latest.buildID, envSpec("2"));
    expect((await builder.waitForBuild(latest.buildID)).status).toBe("ready");
    expect(store.resolve("lat:latest")?.runtime?.env).toEqual({ V: "2" });
    // The bare name (the default tag) stays where it was.
    expect(store.resolve("lat")?.runtime?.env).toEqual({ V: "1" });
    expect(store.resolve("lat:default")?.buildId).toBe(first.buildID);
    expect(Object.fromEntries(builder.tagsOf("lat").map((t) => [t.tag, t.buildID]))).toEqual({
      default: first.buildID,
      v1: first.buildID,
      latest: latest.buildID,
    });
    // Tags name `latest` as given, it can be moved and removed like any tag; default cannot be removed.
    expect(await builder.assignTags("lat:v1", ["latest"])).toEqual({ buildID: first.buildID, tags: ["latest"] });
    expect(store.resolve("lat:latest")?.runtime?.env).toEqual({ V: "1" });
    await builder.removeTags("lat", ["latest"]);
    expect(store.resolve("lat:latest")).toBeUndefined();
    await expect(builder.removeTags("lat", ["default"])).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("name:<build id> names that build; a tag cannot be a UUID", async () => {
    const one = await build("byid", "1");
    await build("byid", "2");
    expect(store.resolve(`byid:${one.buildID}`)?.runtime?.env).toEqual({ V: "1" });
    expect(store.resolve(`byid:${newBuildId()}`)).toBeUndefined();
    expect(await builder.assignTags(`byid:${one.buildID}`, ["first"])).toEqual({ buildID: one.buildID, tags: ["first"] });
    expect(store.resolve("byid:first")?.runtime?.env).toEqual({ V: "1" });
    const uuid = newBuildId();
    expect(() => checkTag(uuid)).toThrow(/cannot be a UUID/);
    expect(() => parseTemplateName(`byid:${uuid}`)).toThrow(/cannot be a UUID/);
    expect(() => builder.requestBuild({ name: "byid", tags: [uuid] })).toThrow(/cannot be a UUID/);
    await expect(builder.assignTags("byid", [uuid])).rejects.toThrow(/cannot be a UUID/);
    expect(checkTag("latest")).toBe("latest");
  });
});
