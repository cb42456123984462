// Where COPY puts things, on the real filesystem: a relative destination is relative to the working directory
// (or, with none set, to the current user's home, as in E2B), the working directory exists once set (`COPY f .`
// puts f inside it, owned as E2B's WORKDIR makes it), and archive symbolic links with absolute targets are kept.
import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTmpLayerDir } from "../src/templates/builder/commit-layer.js";
import { copyCacheKeyInput, runCopyStep } from "../src/templates/builder/copy-step.js";

const UID_BASE = 100_000;
let work: string;
let archive: string;
let lower: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "burrow-copy-dest-"));
  mkdirSync(join(work, "layers"));
  const ctx = join(work, "ctx");
  mkdirSync(join(ctx, "d"), { recursive: true });
  writeFileSync(join(ctx, "a.txt"), "A\n");
  writeFileSync(join(ctx, "d/x.txt"), "X\n");
  execFileSync("ln", ["-s", "/etc/hostname", join(ctx, "d/abs")]);
  archive = join(work, "ctx.tar.gz");
  // As the SDK packs a context: entries relative to it, links not followed.
  await tar.c({ gzip: true, cwd: ctx, file: archive, noDirRecurse: true, follow: false }, ["a.txt", "d", "d/x.txt", "d/abs"]);
  lower = join(work, "lower");
  for (const dir of ["etc", "home/user", "root", "srv"]) mkdirSync(join(lower, dir), { recursive: true });
  writeFileSync(join(lower, "etc/passwd"), "root:x:0:0::/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\napp:x:2000:2000::/home/app:/bin/sh\n");
  writeFileSync(join(lower, "etc/group"), "root:x:0:\nuser:x:1000:\napp:x:2000:\n");
  execFileSync("chown", ["-R", `${UID_BASE}:${UID_BASE}`, lower]);
  execFileSync("chown", [`${UID_BASE + 1000}:${UID_BASE + 1000}`, join(lower, "home/user")]);
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function copy(src: string, dest: string, opts: { workdir?: string; user?: string; owner?: string } = {}) {
  const scratch = await makeTmpLayerDir(join(work, "layers"), "copy");
  const layerDir = join(scratch, "layer");
  mkdirSync(layerDir);
  const copied = await runCopyStep({
    archive,
    src,
    dest,
    owner: opts.owner ?? opts.user ?? "user",
    user: opts.user ?? "user",
    mode: "",
    workdir: opts.workdir,
    lowerDirs: [lower],
    layerDir,
    scratchDir: scratch,
    uidBase: UID_BASE,
    step: "1",
  });
  return { copied, layer: (path: string) => join(layerDir, path) };
}

describe("COPY destinations", () => {
  it("'.' is the working directory even before anything created it; the file goes inside", async () => {
    const { copied, layer } = await copy("a.txt", ".", { workdir: "/app" });
    expect(copied).toEqual(["/app/a.txt"]);
    expect(lstatSync(layer("app")).isDirectory()).toBe(true);
    expect(readFileSync(layer("app/a.txt"), "utf8")).toBe("A\n");
  });

  it("relative paths, './' and 'sub/.' resolve against the working directory", async () => {
    expect((await copy("a.txt", "b.txt", { workdir: "/srv/app" })).copied).toEqual(["/srv/app/b.txt"]);
    expect((await copy("a.txt", "./", { workdir: "/srv/app" })).copied).toEqual(["/srv/app/a.txt"]);
    expect((await copy("a.txt", "sub/.", { workdir: "/srv/app" })).copied).toEqual(["/srv/app/sub/a.txt"]);
    expect((await copy("a.txt", "../up.txt", { workdir: "/srv/app" })).copied).toEqual(["/srv/up.txt"]);
    const dir = await copy("d", "data", { workdir: "/srv/app" });
    expect(dir.copied.sort()).toEqual(["/srv/app/data/abs", "/srv/app/data/x.txt"]);
  });

  it("the working directory a COPY creates belongs to the current user, the files to the COPY's owner", async () => {
    const { layer } = await copy("a.txt", ".", { workdir: "/work/here", user: "app", owner: "root" });
    for (const dir of ["work", "work/here"]) {
      expect(lstatSync(layer(dir)).uid, dir).toBe(UID_BASE + 2000);
      expect(lstatSync(layer(dir)).mode & 0o7777).toBe(0o755);
    }
    expect(lstatSync(layer("work/here/a.txt")).uid).toBe(UID_BASE);
    // An absolute destination inside the working directory sees it as E2B's WORKDIR left it too.
    const absolute = await copy("a.txt", "/work/here/b.txt", { workdir: "/work/here", user: "app", owner: "root" });
    expect(lstatSync(absolute.layer("work/here")).uid).toBe(UID_BASE + 2000);
    // Existing parents keep their owner: /srv stays root's.
    const nested = await copy("a.txt", ".", { workdir: "/srv/x", user: "app", owner: "root" });
    expect(lstatSync(nested.layer("srv")).uid).toBe(UID_BASE);
    expect(lstatSync(nested.layer("srv/x")).uid).toBe(UID_BASE + 2000);
  });

  it("with no working directory set, relative destinations are relative to the current user's home", async () => {
    expect((await copy("a.txt", "rel/", {})).copied).toEqual(["/home/user/rel/a.txt"]);
    expect((await copy("a.txt", ".", {})).copied).toEqual(["/home/user/a.txt"]);
    expect((await copy("a.txt", "x.txt", { user: "root" })).copied).toEqual(["/root/x.txt"]);
    // Absolute destinations are untouched by it.
    expect((await copy("a.txt", "/srv/abs.txt", {})).copied).toEqual(["/srv/abs.txt"]);
  });

  it("a symbolic link with an absolute target is copied as that link, not followed", async () => {
    const { layer } = await copy("d", "/opt/d", {});
    expect(lstatSync(layer("opt/d/abs")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(layer("opt/d/abs"))).toBe("/etc/hostname");
    const single = await copy("d/abs", "/opt/link", {});
    expect(readlinkSync(single.layer("opt/link"))).toBe("/etc/hostname");
  });

  it("only COPY steps whose destination depends on the working directory get new cache keys", () => {
    const digest = "f".repeat(64);
    expect(copyCacheKeyInput(digest, "/opt/app/", "/app")).toBe(digest);
    expect(copyCacheKeyInput(digest, "/opt/app/", undefined)).toBe(digest);
    for (const [dest, workdir] of [
      [".", "/app"],
      ["rel/", undefined],
      ["/app/x", "/app"],
      ["/app", "/app/"],
      ["/opt/.", undefined],
    ] as const) {
      expect(copyCacheKeyInput(digest, dest, workdir), `${dest} in ${workdir}`).not.toBe(digest);
    }
  });
});
