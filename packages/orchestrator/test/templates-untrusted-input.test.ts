// Template build inputs are untrusted: build contexts (COPY archives), image layers and the layers below a
// step. These suites run the host-side code against the real filesystem with hostile inputs and check that
// nothing outside the directory being worked on is read, moved or written.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Template } from "e2b";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { checkImagePath } from "../src/templates/bases/image-path-policy.js";
import { importImage } from "../src/templates/bases/oci-image.js";
import { convertWhiteouts } from "../src/templates/bases/whiteouts.js";
import { makeTmpLayerDir } from "../src/templates/builder/commit-layer.js";
import { resolveBeneath } from "../src/templates/builder/context-paths.js";
import { runCopyStep } from "../src/templates/builder/copy-step.js";
import { checkFilesHash } from "../src/templates/builder/files-hash.js";
import { lookupAccount, readFileInLayers, resolveInLayers, statInLayers } from "../src/templates/builder/layer-files.js";
import { UploadStore } from "../src/templates/builder/upload-store.js";

const UID_BASE = 100_000;
let work: string;
let layersRoot: string;
/** Stands for another template's layer next to the build's scratch space. */
let victimLayer: string;
/** A directory outside everything, standing for host files. */
let host: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "burrow-untrusted-"));
  layersRoot = join(work, "layers");
  host = join(work, "host");
  victimLayer = join(layersRoot, "lvictim");
  mkdirSync(join(victimLayer, "home/user"), { recursive: true });
  writeFileSync(join(victimLayer, "home/user/secret.txt"), "victim secret\n");
  mkdirSync(join(host, "etc"), { recursive: true });
  writeFileSync(join(host, "etc/passwd"), "root:x:0:0::/root:/bin/sh\nhostonly:x:4242:4242::/home/hostonly:/bin/sh\n");
  chmodHost();
});

function chmodHost(): void {
  execFileSync("chown", ["4242:4242", join(host, "etc")]);
  execFileSync("chmod", ["0711", join(host, "etc")]);
}

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** A tar written entry by entry (node-tar's Header), so archives can say things real files cannot. */
function rawTar(entries: { path: string; type?: string; linkpath?: string; body?: string; mode?: number }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? "");
    const header = new tar.Header({
      path: e.path,
      type: (e.type ?? "File") as tar.Header["type"],
      linkpath: e.linkpath,
      size: e.type === undefined || e.type === "File" ? body.length : 0,
      mode: e.mode ?? (e.type === "Directory" ? 0o755 : e.type === "SymbolicLink" ? 0o777 : 0o644),
      mtime: new Date(0),
      uid: 0,
      gid: 0,
    });
    header.encode();
    blocks.push(header.block as Buffer);
    if (body.length > 0) {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function lowerImage(): string {
  const lower = join(work, `lower-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(join(lower, "etc"), { recursive: true });
  mkdirSync(join(lower, "home/user"), { recursive: true });
  mkdirSync(join(lower, "usr/bin"), { recursive: true });
  writeFileSync(join(lower, "etc/passwd"), "root:x:0:0::/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n");
  execFileSync("chown", [`${UID_BASE + 1000}:${UID_BASE + 1000}`, join(lower, "home/user")]);
  return lower;
}

async function copy(archive: Buffer, src: string, dest: string, lowerDirs: string[]) {
  const file = join(work, `ctx-${Math.random().toString(36).slice(2, 8)}.tar`);
  writeFileSync(file, archive);
  const scratch = await makeTmpLayerDir(layersRoot, "copy");
  const layerDir = join(scratch, "layer");
  mkdirSync(layerDir);
  const copied = await runCopyStep({ archive: file, src, dest, owner: "user", mode: "", workdir: "/home/user", lowerDirs, layerDir, scratchDir: scratch, uidBase: UID_BASE, step: "1" });
  return { copied, layerDir };
}

describe("COPY sources stay inside the build context", () => {
  // a/l → ..  (the unpack dir), a/m → l/.. (scratch), a/n → m/.. (the layers root): each link looks harmless.
  const chain = rawTar([
    { path: "a/", type: "Directory" },
    { path: "a/l", type: "SymbolicLink", linkpath: ".." },
    { path: "a/m", type: "SymbolicLink", linkpath: "l/.." },
    { path: "a/n", type: "SymbolicLink", linkpath: "m/.." },
    { path: "a/abs", type: "SymbolicLink", linkpath: "/" },
    { path: "a/inside", type: "SymbolicLink", linkpath: "../b" },
    { path: "b/", type: "Directory" },
    { path: "b/ok.txt", body: "ok\n" },
  ]);

  it("refuses a relative symlink chain out of the unpack directory, naming the source, and moves nothing", async () => {
    const src = "a/n/lvictim/home/user/secret.txt";
    await expect(copy(chain, src, "/tmp/", [lowerImage()])).rejects.toThrow(
      new RegExp(`^step 1: COPY source '${src}' leaves the build context$`),
    );
    expect(readFileSync(join(victimLayer, "home/user/secret.txt"), "utf8")).toBe("victim secret\n");
  });

  it("gives the same answer whether or not the host path exists, and refuses absolute links", async () => {
    const missing = copy(chain, "a/n/lnothere/x", "/tmp/", [lowerImage()]);
    await expect(missing).rejects.toThrow(/^step 1: COPY source 'a\/n\/lnothere\/x' leaves the build context$/);
    await expect(copy(chain, "a/abs/etc/passwd", "/tmp/", [lowerImage()])).rejects.toThrow(/leaves the build context through an absolute symbolic link/);
    await expect(copy(chain, "../outside", "/tmp/", [lowerImage()])).rejects.toThrow(/COPY source '\.\.\/outside' leaves the build context/);
    // A glob never passes a link, so it finds nothing out there either.
    await expect(copy(chain, "a/n/*/home/user/secret.txt", "/tmp/", [lowerImage()])).rejects.toThrow(/matched no uploaded files/);
    expect(readFileSync(join(victimLayer, "home/user/secret.txt"), "utf8")).toBe("victim secret\n");
  });

  it("follows links that stay inside, and copies a link as a link", async () => {
    const { layerDir } = await copy(chain, "a/inside/ok.txt", "/tmp/", [lowerImage()]);
    expect(readFileSync(join(layerDir, "tmp/ok.txt"), "utf8")).toBe("ok\n");
    const links = await copy(chain, "a/n", "/tmp/n", [lowerImage()]);
    expect(lstatSync(join(links.layerDir, "tmp/n")).isSymbolicLink()).toBe(true);
  });

  it("resolveBeneath: .. above the root and loops are errors, missing paths undefined", async () => {
    const root = join(work, "beneath");
    mkdirSync(join(root, "d"), { recursive: true });
    symlinkSync("loop2", join(root, "loop1"));
    symlinkSync("loop1", join(root, "loop2"));
    symlinkSync("../..", join(root, "d/up"));
    await expect(resolveBeneath(root, "loop1/x")).rejects.toMatchObject({ code: Code.InvalidArgument, reason: "context_escape" });
    await expect(resolveBeneath(root, "d/up/x")).rejects.toMatchObject({ code: Code.InvalidArgument, reason: "context_escape" });
    expect(await resolveBeneath(root, "d/missing")).toBeUndefined();
    expect(await resolveBeneath(root, "d")).toBe(join(root, "d"));
  });

  it("never writes through a symbolic link of the archive, and names no host path", async () => {
    const evil = rawTar([
      { path: "x", type: "SymbolicLink", linkpath: host },
      { path: "x/planted", body: "pwned\n" },
    ]);
    const error = await copy(evil, "x", "/tmp/", [lowerImage()]).catch((e: Error) => e);
    expect(existsSync(join(host, "planted"))).toBe(false);
    if (error instanceof Error) expect(error.message).not.toContain(layersRoot);
  });
});

describe("lookups in the layers below never leave them", () => {
  it("reads /etc/passwd through an image symlink within the image, not the host", async () => {
    const lower = lowerImage();
    // The image's /etc is a link to the host's directory: the sandbox would see its own /<host>/etc (absent).
    const top = join(work, "top-etc");
    mkdirSync(top, { recursive: true });
    symlinkSync(join(host, "etc"), join(top, "etc"));
    expect(await readFileInLayers([top, lower], "/etc/passwd")).toBeUndefined();
    expect(await lookupAccount([top, lower], "hostonly")).toBeUndefined();
    // A relative link that climbs out of the layer stops at the image root.
    const climb = join(work, "top-climb");
    mkdirSync(join(lower, "real"), { recursive: true });
    writeFileSync(join(lower, "real/passwd"), "user:x:1000:1000::/home/user:/bin/sh\n");
    mkdirSync(climb, { recursive: true });
    symlinkSync("../../../../../../../../real", join(climb, "etc"));
    expect(await readFileInLayers([climb, lower], "/etc/passwd")).toContain("user:x:1000");
    expect(await lookupAccount([climb, lower], "user")).toMatchObject({ uid: 1000 });
    // /etc → ../etc is /etc itself in the sandbox: a loop, reported, not followed forever.
    const loop = join(work, "top-loop");
    mkdirSync(loop, { recursive: true });
    symlinkSync("../../etc", join(loop, "etc"));
    await expect(readFileInLayers([loop, lower], "/etc/passwd")).rejects.toThrow(/too many levels of symbolic links/);
  });

  it("statInLayers does not pass a symlinked parent; resolveInLayers maps it inside the image", async () => {
    const lower = lowerImage();
    symlinkSync(host, join(lower, "hostlink"));
    symlinkSync("usr/bin", join(lower, "bin"));
    expect(await statInLayers([lower], "/hostlink/etc")).toBeUndefined();
    expect(await statInLayers([lower], "/hostlink")).toMatchObject({});
    expect((await resolveInLayers([lower], "/hostlink/etc", true)).path).toBe(`${host}/etc`);
    expect((await resolveInLayers([lower], "/bin/tool", true)).path).toBe("/usr/bin/tool");
    expect(await statInLayers([lower], `${host}/etc`)).toBeUndefined();
  });

  it("COPY to a symlinked parent writes inside the layer, never on the host", async () => {
    const lower = lowerImage();
    symlinkSync(host, join(lower, "hostlink"));
    symlinkSync("usr/bin", join(lower, "bin"));
    const archive = rawTar([{ path: "tool", body: "#!/bin/sh\n", mode: 0o755 }]);
    const viaImage = await copy(archive, "tool", "/bin/", [lower]);
    expect(viaImage.copied).toEqual(["/usr/bin/tool"]);
    expect(readFileSync(join(viaImage.layerDir, "usr/bin/tool"), "utf8")).toBe("#!/bin/sh\n");
    const hostOwner = statSync(join(host, "etc"));
    const viaHost = await copy(archive, "tool", "/hostlink/etc/", [lower]);
    expect(viaHost.copied).toEqual([`${host}/etc/tool`]);
    expect(existsSync(join(host, "etc/tool"))).toBe(false);
    // The new directories belong to the COPY owner, not to the host directory's owner.
    expect(statSync(join(viaHost.layerDir, host, "etc")).uid).toBe(UID_BASE + 1000);
    expect(statSync(join(host, "etc")).uid).toBe(hostOwner.uid);
    expect(statSync(join(host, "etc")).mode).toBe(hostOwner.mode);
  });
});

describe("COPY into directories the image has", () => {
  it("merges into them, keeping their owner and mode, and follows the image's links to them", async () => {
    const lower = lowerImage();
    execFileSync("chmod", ["0751", join(lower, "etc")]);
    symlinkSync("usr/bin", join(lower, "bin"));
    const archive = rawTar([
      { path: "etc/", type: "Directory", mode: 0o777 },
      { path: "etc/app.conf", body: "conf\n" },
      { path: "bin/", type: "Directory" },
      { path: "bin/tool", body: "tool\n", mode: 0o755 },
    ]);
    const { layerDir, copied } = await copy(archive, ".", "/", [lower]);
    expect(copied.sort()).toEqual(["/bin", "/etc"]);
    // /etc stays root's with its mode; the new file is the COPY owner's.
    expect(statSync(join(layerDir, "etc")).uid).toBe(statSync(join(lower, "etc")).uid);
    expect(statSync(join(layerDir, "etc")).mode & 0o7777).toBe(0o751);
    expect(statSync(join(layerDir, "etc/app.conf")).uid).toBe(UID_BASE + 1000);
    // /bin is the image's link to usr/bin: the file lands there, and no directory shadows the link.
    expect(readFileSync(join(layerDir, "usr/bin/tool"), "utf8")).toBe("tool\n");
    expect(existsSync(join(layerDir, "bin"))).toBe(false);
  });
});

describe("image layers", () => {
  async function layerWith(names: string[]): Promise<string> {
    const dir = await makeTmpLayerDir(layersRoot, "wh");
    mkdirSync(join(dir, "keep"), { recursive: true });
    for (const name of names) writeFileSync(join(dir, name), "");
    return dir;
  }

  it.each([".wh..", ".wh.", ".wh..."])("refuses the whiteout %s and leaves the layers root alone", async (name) => {
    const before = readdirSync(layersRoot).sort();
    const dir = await layerWith([name]);
    await expect(convertWhiteouts(dir)).rejects.toThrow(/invalid whiteout/);
    expect(existsSync(join(dir, "keep"))).toBe(true);
    expect(lstatSync(layersRoot).isDirectory()).toBe(true);
    expect(readdirSync(layersRoot).filter((n) => before.includes(n)).sort()).toEqual(before);
    expect(readFileSync(join(victimLayer, "home/user/secret.txt"), "utf8")).toBe("victim secret\n");
  });

  it("converts ordinary whiteouts and drops AUFS bookkeeping", async () => {
    const dir = await layerWith([".wh.gone", ".wh..wh.plnk"]);
    writeFileSync(join(dir, "gone"), "x");
    expect(await convertWhiteouts(dir)).toEqual({ whiteouts: 1, opaque: 0 });
    const st = lstatSync(join(dir, "gone"));
    expect(st.isCharacterDevice() && st.rdev === 0).toBe(true);
    expect(existsSync(join(dir, ".wh..wh.plnk"))).toBe(false);
  });

  function layout(dir: string, mutate: (layoutDir: string) => void): string {
    const l = join(dir, "layout");
    mkdirSync(join(l, "blobs/sha256"), { recursive: true });
    const blob = (data: string) => {
      const hex = createHash("sha256").update(data).digest("hex");
      writeFileSync(join(l, "blobs/sha256", hex), data);
      return { digest: `sha256:${hex}`, size: data.length };
    };
    const manifest = blob(JSON.stringify({ schemaVersion: 2, config: blob("{}"), layers: [] }));
    writeFileSync(join(l, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }));
    mutate(l);
    return l;
  }

  it("never follows a symlink inside the image root, and does not quote the target", async () => {
    const dir = join(work, "img-symlink");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(host, "secret.json"), "not json: TOPSECRET");
    const l = layout(dir, (root) => {
      execFileSync("rm", [join(root, "index.json")]);
      symlinkSync(join(host, "secret.json"), join(root, "index.json"));
    });
    const opts = { layersRoot, uidBase: UID_BASE, uidCount: 65536, log: () => undefined };
    const error = (await importImage(l, opts).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(/'index.json' in the image is a symbolic link/);
    expect(error.message).not.toContain("TOPSECRET");
    const tarball = join(dir, "image.tar");
    execFileSync("tar", ["-cf", tarball, "-C", l, "."]);
    const fromTar = (await importImage(tarball, opts).catch((e: Error) => e)) as Error;
    expect(fromTar.message).toMatch(/symbolic link/);
    expect(fromTar.message).not.toContain("TOPSECRET");
  });
});

describe("host image paths", () => {
  it("are refused unless under the configured directory, the same way whether or not they exist", async () => {
    const stateDir = join(work, "state");
    const cacheDir = join(work, "cache");
    const images = join(work, "images");
    mkdirSync(join(stateDir, "builds/uploads"), { recursive: true });
    mkdirSync(images, { recursive: true });
    writeFileSync(join(images, "ok.tar"), "");
    symlinkSync(join(host, "etc/passwd"), join(images, "out.tar"));
    const config = { stateDir, cacheDir, imageImportDir: images };
    await expect(checkImagePath(join(images, "ok.tar"), { ...config, imageImportDir: undefined })).rejects.toThrow(/disabled on this server.*BURROW_IMAGE_DIR/);
    expect(await checkImagePath(join(images, "ok.tar"), config)).toBe(join(images, "ok.tar"));
    const existing = await checkImagePath(join(host, "etc/passwd"), config).catch((e: Error) => e.message);
    const missing = await checkImagePath(join(host, "etc/nothing"), config).catch((e: Error) => e.message);
    expect(existing.replace("passwd", "X")).toBe(missing.replace("nothing", "X"));
    expect(existing).toMatch(/outside the server's image directory/);
    await expect(checkImagePath(join(images, "out.tar"), config)).rejects.toThrow(/outside the server's image directory/);
    await expect(checkImagePath(join(images, "../state/builds/uploads/x"), config)).rejects.toThrow(/outside/);
    // An image directory around the state directory would expose uploads: refused.
    await expect(checkImagePath(join(stateDir, "builds/uploads/x"), { ...config, imageImportDir: work })).rejects.toThrow(/overlaps its state/);
  });
});

describe("files hash of uploaded contexts", () => {
  /** A context, its SDK hash and an archive made the way the SDK's upload makes it. */
  async function sdkUpload(src: string, files: Record<string, string>, list: string[]) {
    const ctx = await mkdtemp(join(work, "ctx-"));
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(ctx, path, ".."), { recursive: true });
      writeFileSync(join(ctx, path), content);
    }
    const json = JSON.parse(await Template.toJSON(Template({ fileContextPath: ctx }).fromImage("debian:bookworm").copy(src, "/dest/"), true)) as {
      steps: { type: string; filesHash?: string }[];
    };
    const hash = json.steps.find((s) => s.type === "COPY")?.filesHash as string;
    const archive = join(ctx, "..", `${ctx.split("/").pop()}.tgz`);
    await tar.c({ gzip: true, cwd: ctx, follow: false, noDirRecurse: true, file: archive }, list);
    return { ctx, hash, archive };
  }

  it("verifies what the SDK uploads and catches a file-only context with other bytes", async () => {
    const single = await sdkUpload("app.txt", { "app.txt": "hello\n" }, ["app.txt"]);
    expect((await checkFilesHash(single.archive, "app.txt", "/dest/", single.hash)).verdict).toBe("verified");
    writeFileSync(join(single.ctx, "app.txt"), "HELLO\n");
    await tar.c({ gzip: true, cwd: single.ctx, noDirRecurse: true, file: single.archive }, ["app.txt"]);
    expect((await checkFilesHash(single.archive, "app.txt", "/dest/", single.hash)).verdict).toBe("mismatch");
    // The hash covers src and dest as written.
    const again = await sdkUpload("app.txt", { "app.txt": "hello\n" }, ["app.txt"]);
    expect((await checkFilesHash(again.archive, "app.txt", "/other/", again.hash)).verdict).toBe("mismatch");
  });

  it("verifies directory contexts on this filesystem; other bytes are at best undecidable", async () => {
    const dir = await sdkUpload("app", { "app/a.txt": "a", "app/sub/b.txt": "b" }, ["app", "app/a.txt", "app/sub", "app/sub/b.txt"]);
    expect((await checkFilesHash(dir.archive, "app", "/dest/", dir.hash)).verdict).toBe("verified");
    writeFileSync(join(dir.ctx, "app/a.txt"), "A");
    await tar.c({ gzip: true, cwd: dir.ctx, noDirRecurse: true, file: dir.archive }, ["app", "app/a.txt", "app/sub", "app/sub/b.txt"]);
    expect((await checkFilesHash(dir.archive, "app", "/dest/", dir.hash)).verdict).toBe("undecidable");
  });

  it("calls a non-archive unreadable and counts what an archive unpacks to", async () => {
    const junk = join(work, "junk.tar");
    writeFileSync(junk, "this is not a tar archive at all".repeat(40));
    expect((await checkFilesHash(junk, "x", "/", "0".repeat(64))).verdict).toBe("unreadable");
    const big = join(work, "big.tar");
    writeFileSync(big, rawTar([{ path: "f", body: "x".repeat(1000) }]));
    expect((await checkFilesHash(big, "f", "/", "0".repeat(64))).unpackedBytes).toBe(1000);
  });
});

describe("upload store", () => {
  const limits = { maxBytes: 1000, maxCount: 3, maxTotalBytes: 2500, maxUnpackedBytes: 10_000, maxAgeMs: 60_000 };
  const h = (n: number) => createHash("sha256").update(String(n)).digest("hex");
  const body = (bytes: number) => Readable.from([Buffer.alloc(bytes, 1)]);

  it("writes once, refuses replacement, too large uploads and a full store", async () => {
    const store = new UploadStore(join(work, "uploads-a"), limits);
    await store.write("tpl", h(1), body(10));
    expect(await store.has("tpl", h(1))).toBe(true);
    expect(await store.has("other", h(1))).toBe(false);
    await expect(store.write("tpl", h(1), body(20))).rejects.toMatchObject({ code: Code.AlreadyExists });
    expect(statSync(store.path("tpl", h(1))).size).toBe(10);
    // The same bytes again (two builds uploading at once) are no replacement: accepted, nothing changes.
    const inode = statSync(store.path("tpl", h(1))).ino;
    await store.write("tpl", h(1), body(10));
    expect(statSync(store.path("tpl", h(1))).ino).toBe(inode);
    // Two writers of one hash at once: exactly one wins.
    const results = await Promise.allSettled([store.write("tpl", h(2), body(30)), store.write("tpl", h(2), body(40))]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({ reason: { code: Code.AlreadyExists } });
    await expect(store.write("tpl", h(3), body(1001))).rejects.toMatchObject({ code: Code.ResourceExhausted });
    await expect(store.write("tpl", h(3), body(10), { contentLength: 5000 })).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect(await store.has("tpl", h(3))).toBe(false);
    await store.write("tpl", h(3), body(10));
    await expect(store.write("tpl", h(4), body(10))).rejects.toMatchObject({ code: Code.ResourceExhausted, message: /as many uploaded/ });
    await expect(store.write("../x", h(5), body(1))).rejects.toMatchObject({ code: Code.InvalidArgument });
    expect(readdirSync(join(work, "uploads-a", ".partial"))).toEqual([]);
  });

  it("collects old uploads no build uses, stray partial files and legacy files", async () => {
    const root = join(work, "uploads-b");
    const store = new UploadStore(root, limits);
    await store.write("tpl", h(1), body(10));
    await store.write("tpl", h(2), body(10));
    await store.write("new", h(3), body(10));
    writeFileSync(join(root, ".partial", "tpl-stale"), "x");
    writeFileSync(join(root, h(9)), "legacy flat upload");
    const later = Date.now() + limits.maxAgeMs + 1;
    // Young uploads stay whatever the clock of the others says.
    expect(await store.collect(new Set(), Date.now())).toBe(0);
    expect(await store.collect(new Set([`tpl/${h(2)}`]), later)).toBe(2);
    expect(await store.has("tpl", h(1))).toBe(false);
    expect(await store.has("tpl", h(2))).toBe(true);
    expect(await store.has("new", h(3))).toBe(false);
    expect(readdirSync(root).sort()).toEqual([".partial", "tpl"]);
    expect(readdirSync(join(root, ".partial"))).toEqual([]);
  });
});
