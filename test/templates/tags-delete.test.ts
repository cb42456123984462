// Template.exists, tags (assignTags / getTags / removeTags) and delete through the official SDK and REST, and
// garbage collection of the layers a deleted template leaves behind once no sandbox uses them.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const name = `tags-${suffix}`;

afterAll(async () => {
  await deleteTemplate(env, name);
});

function versioned(version: string) {
  return Template().fromTemplate("base").runCmd(`echo ${version}-${suffix} > /home/user/version`);
}

async function versionIn(ref: string): Promise<string> {
  const sandbox = await Sandbox.create(ref, conn);
  try {
    return (await sandbox.commands.run("cat /home/user/version")).stdout.trim();
  } finally {
    await sandbox.kill();
  }
}

interface Manifest {
  templateId: string;
  layers: string[];
  builds?: Record<string, { layers: string[] }>;
}

function manifests(): Manifest[] {
  const dir = join(env.stateDir, "templates");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Manifest);
}

function layersOf(manifest: Manifest): Set<string> {
  return new Set([...manifest.layers, ...Object.values(manifest.builds ?? {}).flatMap((b) => b.layers)]);
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  if (!condition()) throw new Error(`gave up waiting: ${what}`);
}

describe("template names, tags and delete", () => {
  let v1BuildId = "";
  let templateId = "";

  it("exists is false before the build and true after, for the name, name:tag and the id", { timeout: 600_000 }, async () => {
    expect(await Template.exists(name, conn)).toBe(false);
    const info = await Template.build(versioned("v1"), `${name}:v1`, conn);
    v1BuildId = info.buildId;
    templateId = info.templateId;
    expect(await Template.exists(name, conn)).toBe(true);
    expect(await Template.exists(`${name}:v1`, conn)).toBe(true);
    expect(await Template.exists(info.templateId, conn)).toBe(true);
    expect(await Template.exists(`${name}:nosuchtag`, conn)).toBe(false);
  });

  it("assigns, lists and removes tags; each tag keeps pointing at its build", { timeout: 600_000 }, async () => {
    let tags = await Template.getTags(templateId, conn);
    expect(tags.find((t) => t.tag === "v1")?.buildId).toBe(v1BuildId);

    const assigned = await Template.assignTags(`${name}:v1`, ["prod", "stable"], conn);
    expect(assigned).toEqual({ buildId: v1BuildId, tags: ["prod", "stable"] });

    // A second build with explicit tags gets those tags only: the bare name (the default tag) stays on v1.
    const v2 = await Template.build(versioned("v2"), name, { ...conn, tags: ["v2"] });
    expect(v2.templateId).toBe(templateId);
    tags = await Template.getTags(templateId, conn);
    const byTag = Object.fromEntries(tags.map((t) => [t.tag, t.buildId]));
    expect(byTag).toMatchObject({ v1: v1BuildId, prod: v1BuildId, stable: v1BuildId, v2: v2.buildId });
    expect(tags.every((t) => t.createdAt instanceof Date && !Number.isNaN(t.createdAt.getTime()))).toBe(true);

    expect(await versionIn(`${name}:prod`)).toBe(`v1-${suffix}`);
    expect(await versionIn(`${name}:v2`)).toBe(`v2-${suffix}`);
    expect(await versionIn(name)).toBe(`v1-${suffix}`);

    await Template.removeTags(name, ["prod"], conn);
    tags = await Template.getTags(templateId, conn);
    expect(tags.map((t) => t.tag)).not.toContain("prod");
    expect(tags.map((t) => t.tag)).toContain("stable");
    // A build of the bare name moves the default tag to it.
    const v3 = await Template.build(versioned("v3"), name, conn);
    expect((await Template.getTags(templateId, conn)).find((t) => t.tag === "default")?.buildId).toBe(v3.buildId);
    expect(await versionIn(name)).toBe(`v3-${suffix}`);
    expect(await versionIn(`${name}:stable`)).toBe(`v1-${suffix}`);
    expect(await Template.exists(`${name}:prod`, conn)).toBe(false);
    await expect(Sandbox.create(`${name}:prod`, conn)).rejects.toThrow(/not found/);
    // Removing a tag that is not there is an error, not a silent success.
    await expect(Template.removeTags(name, ["prod"], conn)).rejects.toThrow(/not found/);
  });

  it("delete unpublishes at once; layers go when the last sandbox using them ends", { timeout: 600_000 }, async () => {
    const mine = manifests().find((m) => m.templateId === templateId);
    expect(mine).toBeDefined();
    const others = new Set(manifests().filter((m) => m.templateId !== templateId).flatMap((m) => [...layersOf(m)]));
    const own = [...layersOf(mine as Manifest)].filter((id) => !others.has(id));
    // Three builds, one RUN layer each, stacked on the shared base.
    expect(own).toHaveLength(3);
    const layerDir = (id: string) => join(env.stateDir, "layers", id);
    const shared = [...layersOf(mine as Manifest)].filter((id) => others.has(id));
    expect(shared.length).toBeGreaterThan(0);

    // What a killed build would leave: a temporary directory and a layer nothing references.
    const leftovers = [join(env.stateDir, "layers", `.tmp-killed-build-${suffix}`), join(env.stateDir, "layers", `lorphan${suffix}`)];
    for (const path of leftovers) mkdirSync(join(path, "etc"), { recursive: true });

    const sandbox = await Sandbox.create(name, conn);
    try {
      const res = await fetch(`${env.apiUrl}/templates/${encodeURIComponent(name)}`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
      expect(res.status).toBe(204);
      expect(await Template.exists(name, conn)).toBe(false);
      expect(await Template.exists(templateId, conn)).toBe(false);
      await expect(Sandbox.create(name, conn)).rejects.toThrow(/not found/);
      // The running sandbox still stands on its layers.
      for (const id of own) expect(existsSync(layerDir(id))).toBe(true);
      expect((await sandbox.commands.run("cat /home/user/version")).stdout.trim()).toBe(`v3-${suffix}`);
    } finally {
      await sandbox.kill();
    }
    await waitFor(() => own.every((id) => !existsSync(layerDir(id))), "the deleted template's layers to be collected");
    for (const id of shared) expect(existsSync(layerDir(id))).toBe(true);
    for (const path of leftovers) expect(existsSync(path), path).toBe(false);
    // Deleting again: 404.
    const again = await fetch(`${env.apiUrl}/templates/${encodeURIComponent(templateId)}`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
    expect(again.status).toBe(404);
  });

  it("the base template cannot be deleted", async () => {
    const res = await fetch(`${env.apiUrl}/templates/base`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await Template.exists("base", conn)).toBe(true);
  });
});
