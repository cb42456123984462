// E2B template behaviours through the official SDK (e2b 2.51): build ids are UUIDs wherever the SDK sees them,
// `latest` is an ordinary tag (the bare name is the `default` tag), `name:<build id>` names a build, a COPY
// with a relative destination lands in the working directory set before it (or the user's home when none is),
// and a context holding a symbolic link with an absolute target builds and keeps the link.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
/** What Python's `str(UUID(x))` gives back unchanged: the SDK parses these fields with `UUID(...)`. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const context = mkdtempSync(join(tmpdir(), "burrow-e2b-behaviours-"));
writeFileSync(join(context, "a.txt"), "A\n");
mkdirSync(join(context, "d"));
writeFileSync(join(context, "d", "x.txt"), "X\n");
symlinkSync("/etc/hostname", join(context, "d", "abs"));
symlinkSync("x.txt", join(context, "d", "rel"));
const built = new Set<string>();

afterAll(async () => {
  for (const name of built) await deleteTemplate(env, name);
  rmSync(context, { recursive: true, force: true });
});

/** A template that differs only in an ENV value: a build without sandboxes, told apart by $VERSION. */
const versioned = (version: string) => Template().fromTemplate("base").setEnvs({ VERSION: `${version}-${suffix}` });

async function build(template: ReturnType<typeof Template> | ReturnType<typeof versioned>, name: string, opts: { tags?: string[] } = {}) {
  built.add(name.split(":")[0] as string);
  return Template.build(template, name, { ...conn, ...opts });
}

async function inSandbox(ref: string, command: string): Promise<string> {
  const sandbox = await Sandbox.create(ref, conn);
  try {
    return (await sandbox.commands.run(command)).stdout;
  } finally {
    await sandbox.kill();
  }
}

const versionIn = async (ref: string) => (await inSandbox(ref, "echo $VERSION")).trim();

describe("E2B template behaviours through the official SDK", () => {
  const name = `behave-${suffix}`;
  let v1 = { buildId: "", templateId: "" };
  let v2 = { buildId: "", templateId: "" };

  it("build ids are UUIDs in every answer the SDK reads: build, status, tags, assigned tags", { timeout: 600_000 }, async () => {
    v1 = await build(versioned("v1"), `${name}:v1`);
    expect(v1.buildId).toMatch(UUID);
    const status = await Template.getBuildStatus(v1, conn);
    expect(status.buildID).toBe(v1.buildId);
    expect(status.status).toBe("ready");
    const tags = await Template.getTags(v1.templateId, conn);
    expect(tags.map((t) => t.tag).sort()).toEqual(["default", "v1"]);
    for (const tag of tags) expect(tag.buildId).toBe(v1.buildId);
    expect(await Template.assignTags(`${name}:v1`, ["first"], conn)).toEqual({ buildId: v1.buildId, tags: ["first"] });
    // The template's id is not a UUID (E2B's are not either).
    expect(v1.templateId).not.toMatch(UUID);
  });

  it("`latest` is an ordinary tag: unknown until assigned, never the bare name's build", { timeout: 600_000 }, async () => {
    expect(await Template.exists(`${name}:latest`, conn)).toBe(false);
    await expect(Sandbox.create(`${name}:latest`, conn)).rejects.toThrow(/not found/);

    const latest = await build(versioned("v2"), `${name}:latest`);
    v2 = latest;
    expect(latest.tags).toEqual(["latest"]);
    expect(latest.buildId).toMatch(UUID);
    expect(latest.buildId).not.toBe(v1.buildId);
    expect(await versionIn(`${name}:latest`)).toBe(`v2-${suffix}`);
    // The bare name is the default tag, which the `latest` build did not move.
    expect(await versionIn(name)).toBe(`v1-${suffix}`);
    expect(await versionIn(`${name}:default`)).toBe(`v1-${suffix}`);
    const byTag = Object.fromEntries((await Template.getTags(v1.templateId, conn)).map((t) => [t.tag, t.buildId]));
    expect(byTag).toEqual({ default: v1.buildId, v1: v1.buildId, first: v1.buildId, latest: v2.buildId });

    // Assigned from, moved and removed like any tag (the default tag is the one that cannot be removed).
    expect(await Template.assignTags(`${name}:latest`, ["prod"], conn)).toEqual({ buildId: v2.buildId, tags: ["prod"] });
    expect(await Template.assignTags(`${name}:v1`, ["latest"], conn)).toEqual({ buildId: v1.buildId, tags: ["latest"] });
    expect(await versionIn(`${name}:latest`)).toBe(`v1-${suffix}`);
    await Template.removeTags(name, ["latest"], conn);
    expect(await Template.exists(`${name}:latest`, conn)).toBe(false);
    expect(await Template.exists(name, conn)).toBe(true);
    await expect(Template.removeTags(name, ["default"], conn)).rejects.toThrow(/default tag cannot be removed/);
  });

  it("`name:<build id>` names that build; a tag cannot be a UUID", { timeout: 600_000 }, async () => {
    expect(await versionIn(`${name}:${v2.buildId}`)).toBe(`v2-${suffix}`);
    expect(await versionIn(`${v1.templateId}:${v1.buildId}`)).toBe(`v1-${suffix}`);
    expect(await Template.exists(`${name}:${v2.buildId}`, conn)).toBe(true);
    expect(await Template.exists(`${name}:${randomUUID()}`, conn)).toBe(false);
    expect(await Template.assignTags(`${name}:${v2.buildId}`, ["second"], conn)).toEqual({ buildId: v2.buildId, tags: ["second"] });
    await expect(Template.assignTags(name, [randomUUID()], conn)).rejects.toThrow(/cannot be a UUID/);
  });

  it("COPY with a relative destination lands in the working directory set before it", { timeout: 600_000 }, async () => {
    const copyName = `relcopy-${suffix}`;
    const template = Template({ fileContextPath: context })
      .fromTemplate("base")
      // No WORKDIR yet: relative to the user's home, as E2B resolves it.
      .copy("a.txt", "in-home.txt")
      .setWorkdir("/app")
      // Nothing has created /app: '.' is still the working directory, and the file goes inside it.
      .copy("a.txt", ".")
      .copy("a.txt", "b.txt")
      .copy("d", "data")
      .setWorkdir("sub")
      .copy("a.txt", "./");
    const info = await build(template, copyName);
    expect(info.buildId).toMatch(UUID);
    const out = await inSandbox(
      copyName,
      "pwd; stat -c '%F %U' /app /app/sub; cat /app/a.txt /app/b.txt /app/data/x.txt /app/sub/a.txt /home/user/in-home.txt; ls /",
    );
    const lines = out.split("\n");
    expect(lines.slice(0, 8)).toEqual(["/app/sub", "directory user", "directory user", "A", "A", "X", "A", "A"]);
    expect(lines).not.toContain("in-home.txt");

    // The same through the SDK's Dockerfile parser.
    const dockerfileName = `relcopydf-${suffix}`;
    const fromDockerfile = Template({ fileContextPath: context }).fromDockerfile(
      ["FROM e2bdev/base", "WORKDIR /srv/app", "COPY a.txt .", "COPY d ./d", "USER user"].join("\n"),
    );
    await build(fromDockerfile, dockerfileName);
    expect(await inSandbox(dockerfileName, "pwd; stat -c %F /srv/app; cat /srv/app/a.txt /srv/app/d/x.txt")).toBe(
      "/srv/app\ndirectory\nA\nX\n",
    );
  });

  it("a context holding a symbolic link with an absolute target builds; the link is kept as it is", { timeout: 600_000 }, async () => {
    const linkName = `abslink-${suffix}`;
    const logs: string[] = [];
    const template = Template({ fileContextPath: context }).fromTemplate("base").copy("d", "/opt/d").copy("d/abs", "/opt/hostname-link");
    await Template.build(template, linkName, { ...conn, onBuildLogs: (e) => logs.push(e.message) });
    built.add(linkName);
    expect(logs.join("\n")).not.toMatch(/TAR_ENTRY|stripping/);
    // Links, not copies of what they point at on the build host; inside the sandbox they point into the sandbox.
    const out = await inSandbox(
      linkName,
      "readlink /opt/d/abs /opt/hostname-link /opt/d/rel; cat /opt/d/rel; test -L /opt/d/abs && test -L /opt/hostname-link && echo links",
    );
    expect(out).toBe("/etc/hostname\n/etc/hostname\nx.txt\nX\nlinks\n");
  });
});
