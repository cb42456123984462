// A state directory from before build ids were UUIDs: its manifests name builds by 20-character [a-z0-9] ids.
// After a restart on such a state, the official SDK still creates sandboxes by name and tag, sees every build
// id as a UUID (a stable one derived from the old id), can name an old build by that UUID, tag it and build
// on it; the manifest keeps the old ids as stored.
//
// Its own server process and state directory: the old manifest must be in place when the server starts.
import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LEGACY_ID = /^[a-z0-9]{20}$/;

interface Manifest {
  templateId: string;
  aliases: string[];
  buildId?: string;
  builds?: Record<string, unknown>;
  tags?: Record<string, string>;
}

/** What Burrow's ids looked like: 20 characters of [a-z0-9]. */
function legacyId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(20)].map((b) => alphabet[b % alphabet.length]).join("");
}

describe("builds stored before build ids were UUIDs", () => {
  const instance = newTestInstance("legacy-ids");
  const name = "legacy";
  let server: ServerProcess | undefined;
  let port = 0;
  let conn = { apiKey: "", apiUrl: "", sandboxUrl: "" };
  const manifestFile = () => {
    const dir = join(instance.stateDir, "templates");
    for (const file of readdirSync(dir)) {
      const manifest = JSON.parse(readFileSync(join(dir, file), "utf8")) as Manifest;
      if (manifest.aliases.includes(name)) return join(dir, file);
    }
    throw new Error("no manifest of the template");
  };
  const versionIn = async (ref: string) => {
    const sandbox = await Sandbox.create(ref, conn);
    try {
      return (await sandbox.commands.run("echo $VERSION")).stdout.trim();
    } finally {
      await sandbox.kill();
    }
  };
  const renamed = new Map<string, string>();

  beforeAll(async () => {
    port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    conn = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const v1 = await Template.build(Template().fromTemplate("base").setEnvs({ VERSION: "v1" }), `${name}:v1`, conn);
    const v2 = await Template.build(Template().fromTemplate("base").setEnvs({ VERSION: "v2" }), name, conn);
    await stopServerProcess(server, "SIGTERM");
    server = undefined;
    // Rewrite the manifest as an older Burrow wrote it: same builds and tags under old-style ids.
    const file = manifestFile();
    const manifest = JSON.parse(readFileSync(file, "utf8")) as Manifest;
    for (const uuid of [v1.buildId, v2.buildId]) renamed.set(uuid, legacyId());
    const old = (id: string) => renamed.get(id) ?? id;
    const legacy: Manifest = {
      ...manifest,
      buildId: old(manifest.buildId ?? ""),
      builds: Object.fromEntries(Object.entries(manifest.builds ?? {}).map(([id, build]) => [old(id), build])),
      tags: Object.fromEntries(Object.entries(manifest.tags ?? {}).map(([tag, id]) => [tag, old(id)])),
    };
    writeFileSync(file, JSON.stringify(legacy, null, 2));
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
  }, 600_000);

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("keep working by name and tag, and show as stable UUIDs that name them", { timeout: 600_000 }, async () => {
    const [v1Old, v2Old] = [...renamed.values()] as [string, string];
    expect(await versionIn(name)).toBe("v2");
    expect(await versionIn(`${name}:v1`)).toBe("v1");

    const tags = await Template.getTags(name, conn);
    const byTag = Object.fromEntries(tags.map((t) => [t.tag, t.buildId]));
    expect(Object.keys(byTag).sort()).toEqual(["default", "v1"]);
    for (const id of Object.values(byTag)) expect(id).toMatch(UUID);
    const [v1Wire, v2Wire] = [byTag.v1 as string, byTag.default as string];
    expect(v1Wire).not.toBe(v2Wire);
    // Not the ids the builds had before the rewrite: derived from the stored ones.
    expect(renamed.has(v1Wire)).toBe(false);

    // The shown UUID names the old build, for sandboxes and for tags, and is the same every time.
    expect(await versionIn(`${name}:${v1Wire}`)).toBe("v1");
    expect(await Template.assignTags(`${name}:${v1Wire}`, ["old-one"], conn)).toEqual({ buildId: v1Wire, tags: ["old-one"] });
    expect(await versionIn(`${name}:old-one`)).toBe("v1");
    expect((await Template.getTags(name, conn)).find((t) => t.tag === "old-one")?.buildId).toBe(v1Wire);
    const listed = (await (await fetch(`${conn.apiUrl}/templates/${name}`, { headers: { "x-api-key": conn.apiKey } })).json()) as {
      builds: { buildID: string }[];
    };
    expect(listed.builds.map((b) => b.buildID).sort()).toEqual([v1Wire, v2Wire].sort());

    // A new build on top of the old template, and of it: UUID ids beside the old ones.
    const child = await Template.build(Template().fromTemplate(`${name}:v1`).setEnvs({ CHILD: "yes" }), `${name}-child`, conn);
    expect(child.buildId).toMatch(UUID);
    expect(await versionIn(`${name}-child`)).toBe("v1");
    const v3 = await Template.build(Template().fromTemplate("base").setEnvs({ VERSION: "v3" }), name, conn);
    expect(v3.buildId).toMatch(UUID);
    expect(await versionIn(name)).toBe("v3");
    expect(await versionIn(`${name}:${v2Wire}`)).toBe("v2");

    // The stored ids stay as they were.
    const manifest = JSON.parse(readFileSync(manifestFile(), "utf8")) as Manifest;
    expect(Object.keys(manifest.builds ?? {}).sort()).toEqual([v1Old, v2Old, v3.buildId].sort());
    expect(manifest.tags).toMatchObject({ v1: v1Old, "old-one": v1Old, default: v3.buildId });
    for (const id of [v1Old, v2Old]) expect(id).toMatch(LEGACY_ID);
  });
});
