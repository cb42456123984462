// Host-side layer work against the real filesystem: OCI import (whiteouts, uid shift) and COPY extraction.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importImage } from "../src/templates/bases/oci-image.js";
import { runCopyStep } from "../src/templates/builder/copy-step.js";
import { makeTmpLayerDir } from "../src/templates/builder/commit-layer.js";

const UID_BASE = 100_000;
let work: string;
let layersRoot: string;

function writeBlob(layout: string, content: Buffer | string): { digest: string; size: number } {
  const data = Buffer.from(content);
  const hex = createHash("sha256").update(data).digest("hex");
  writeFileSync(join(layout, "blobs/sha256", hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

/** A two-layer OCI image: the second layer deletes a file and makes a directory opaque. */
function buildOciLayout(dir: string): string {
  const l1 = join(dir, "l1");
  mkdirSync(join(l1, "etc"), { recursive: true });
  mkdirSync(join(l1, "data"), { recursive: true });
  writeFileSync(join(l1, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n");
  writeFileSync(join(l1, "etc/group"), "root:x:0:\napp:x:1000:\n");
  writeFileSync(join(l1, "data/old"), "old");
  writeFileSync(join(l1, "gone.txt"), "bye");
  const l2 = join(dir, "l2");
  mkdirSync(join(l2, "data"), { recursive: true });
  writeFileSync(join(l2, "data/.wh..wh..opq"), "");
  writeFileSync(join(l2, "data/new"), "new");
  writeFileSync(join(l2, ".wh.gone.txt"), "");
  const layout = join(dir, "layout");
  mkdirSync(join(layout, "blobs/sha256"), { recursive: true });
  execFileSync("tar", ["--owner=0", "--group=0", "-czf", join(dir, "l1.tgz"), "-C", l1, "."]);
  execFileSync("tar", ["--owner=1000", "--group=1000", "-cf", join(dir, "l2.tar"), "-C", l2, "."]);
  const layers = [
    { mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...writeBlob(layout, readFileSync(join(dir, "l1.tgz"))) },
    { mediaType: "application/vnd.oci.image.layer.v1.tar", ...writeBlob(layout, readFileSync(join(dir, "l2.tar"))) },
  ];
  const config = writeBlob(layout, JSON.stringify({ config: { Env: ["PATH=/usr/bin:/bin", "X=1"], User: "app", WorkingDir: "/data" } }));
  const manifest = writeBlob(
    layout,
    JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config }, layers }),
  );
  writeFileSync(join(layout, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(join(layout, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", ...manifest }] }));
  const tarball = join(dir, "image.tar");
  execFileSync("tar", ["-cf", tarball, "-C", layout, "."]);
  return tarball;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "burrow-tpl-"));
  layersRoot = join(work, "layers");
  mkdirSync(layersRoot);
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("OCI import", () => {
  it("imports layers with overlay whiteouts and shifted owners, and reuses them the second time", async () => {
    const tarball = buildOciLayout(work);
    const logs: string[] = [];
    const opts = { layersRoot, uidBase: UID_BASE, uidCount: 65536, log: (m: string) => logs.push(m) };
    const image = await importImage(tarball, opts);
    expect(image.layers).toHaveLength(2);
    expect(image.config).toMatchObject({ env: { X: "1" }, user: "app", workdir: "/data" });
    const [top, bottom] = image.layers.map((id) => join(layersRoot, id)) as [string, string];
    const whiteout = lstatSync(join(top, "gone.txt"));
    expect(whiteout.isCharacterDevice() && whiteout.rdev === 0).toBe(true);
    expect(() => lstatSync(join(top, ".wh.gone.txt"))).toThrow();
    const opaque = execFileSync("getfattr", ["--only-values", "-n", "trusted.overlay.opaque", join(top, "data")]).toString();
    expect(opaque).toBe("y");
    expect(lstatSync(join(top, "data/new")).uid).toBe(UID_BASE + 1000);
    expect(lstatSync(join(bottom, "etc/passwd")).uid).toBe(UID_BASE);

    const again = await importImage(tarball, { ...opts, log: (m: string) => logs.push(m) });
    expect(again.layers).toEqual(image.layers);
    expect(logs.filter((l) => l.endsWith("cached"))).toHaveLength(2);
    // Scratch space is gone: only the two layers remain.
    expect(execFileSync("ls", ["-A", layersRoot]).toString().trim().split("\n").sort()).toEqual([...image.layers].sort());
  });
});

describe("COPY step", () => {
  it("unpacks into a layer owned by the target user, keeping the attributes of existing parents", async () => {
    const ctx = join(work, "ctx");
    mkdirSync(join(ctx, "app/sub"), { recursive: true });
    writeFileSync(join(ctx, "app/one.txt"), "1");
    writeFileSync(join(ctx, "app/sub/two.txt"), "2");
    writeFileSync(join(ctx, "single.txt"), "s");
    const archive = join(work, "ctx.tar.gz");
    await tar.c({ gzip: true, cwd: ctx, file: archive, noDirRecurse: true }, ["app", "app/one.txt", "app/sub", "app/sub/two.txt", "single.txt"]);
    const lower = join(work, "lower");
    mkdirSync(join(lower, "etc"), { recursive: true });
    mkdirSync(join(lower, "home/app"), { recursive: true });
    writeFileSync(join(lower, "etc/passwd"), "root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n");
    execFileSync("chown", [`${UID_BASE + 1000}:${UID_BASE + 1000}`, join(lower, "home/app")]);
    execFileSync("chmod", ["0700", join(lower, "home/app")]);

    const copy = async (src: string, dest: string, mode = "") => {
      const scratch = await makeTmpLayerDir(layersRoot, "copy");
      const layerDir = join(scratch, "layer");
      mkdirSync(layerDir);
      await runCopyStep({ archive, src, dest, owner: "app", mode, workdir: "/home/app", lowerDirs: [lower], layerDir, scratchDir: scratch, uidBase: UID_BASE, step: "1" });
      return layerDir;
    };
    const dirLayer = await copy("app", "/home/app/project");
    expect(readFileSync(join(dirLayer, "home/app/project/sub/two.txt"), "utf8")).toBe("2");
    expect(lstatSync(join(dirLayer, "home/app/project/one.txt")).uid).toBe(UID_BASE + 1000);
    // /home/app existed below: same owner and mode, so the overlay does not change it.
    expect(lstatSync(join(dirLayer, "home/app")).mode & 0o7777).toBe(0o700);
    expect(lstatSync(join(dirLayer, "home/app")).uid).toBe(UID_BASE + 1000);

    const fileLayer = await copy("single.txt", "rel/", "0640");
    expect(lstatSync(join(fileLayer, "home/app/rel/single.txt")).mode & 0o7777).toBe(0o640);
    await expect(copy("missing.txt", "/x")).rejects.toThrow(/matched no uploaded files/);
    expect((await stat(archive)).size).toBeGreaterThan(0);
  });
});
