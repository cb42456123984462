// Images cannot name host paths or the layers root. fromImage with a host path is allowed only under the
// server's image directory (BURROW_IMAGE_DIR / imageImportDir), and refused the same way whether or not the
// path exists; an image whose layer holds a whiteout for the layer itself or its parent (`.wh..`, `.wh.`) is
// refused before anything is removed, and the server goes on building and starting sandboxes.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BuildError, Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplates, rawTar, type TarEntry } from "./template-rest.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const created = new Set<string>();
const images = mkdtempSync(join(env.imageDir, "security-"));
const layersDir = join(env.stateDir, "layers");

afterAll(async () => {
  await deleteTemplates(env, created);
  rmSync(images, { recursive: true, force: true });
});

async function buildFrom(image: string, label: string): Promise<string> {
  const n = `image-${label}-${suffix}`;
  created.add(n);
  try {
    await Template.build(Template().fromImage(image), n, conn);
    return "ready";
  } catch (error) {
    expect(error).toBeInstanceOf(BuildError);
    return (error as Error).message;
  }
}

/** An OCI image tarball in the image directory whose single layer holds `entries`. */
function ociImage(file: string, entries: TarEntry[], mutate?: (layout: string) => void): string {
  const layout = mkdtempSync(join(images, "layout-"));
  mkdirSync(join(layout, "blobs/sha256"), { recursive: true });
  const blob = (data: Buffer, mediaType: string) => {
    const hex = createHash("sha256").update(data).digest("hex");
    writeFileSync(join(layout, "blobs/sha256", hex), data);
    return { mediaType, digest: `sha256:${hex}`, size: data.length };
  };
  const layer = blob(rawTar(entries), "application/vnd.oci.image.layer.v1.tar");
  const config = blob(Buffer.from(JSON.stringify({ config: {} })), "application/vnd.oci.image.config.v1+json");
  const manifest = blob(Buffer.from(JSON.stringify({ schemaVersion: 2, config, layers: [layer] })), "application/vnd.oci.image.manifest.v1+json");
  writeFileSync(join(layout, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }));
  mutate?.(layout);
  const tarball = join(images, file);
  execFileSync("tar", ["-cf", tarball, "-C", layout, "."]);
  rmSync(layout, { recursive: true, force: true });
  return tarball;
}

async function serverStillWorks(layersBefore: string[]): Promise<void> {
  const after = readdirSync(layersDir);
  for (const layer of layersBefore) expect(after).toContain(layer);
  const sandbox = await Sandbox.create("base", conn);
  try {
    expect((await sandbox.commands.run("echo alive")).stdout).toBe("alive\n");
  } finally {
    await sandbox.kill();
  }
  const n = `image-after-${suffix}`;
  created.add(n);
  await Template.build(Template().fromTemplate("base").runCmd(`echo ${suffix} > /tmp/after`), n, conn);
}

describe("host image paths", () => {
  it("outside the image directory are refused, whether or not they exist", { timeout: 120_000 }, async () => {
    const existing = await buildFrom("docker-archive:/etc/passwd", "etc");
    const missing = await buildFrom("docker-archive:/etc/no-such-file", "missing");
    expect(existing).toBe("image path /etc/passwd is outside the server's image directory " + env.imageDir + "; put the image there");
    expect(missing.replace("no-such-file", "passwd")).toBe(existing);
    // The server's own uploads and state are never images, whatever their form.
    const uploads = await buildFrom(`oci-archive:${env.stateDir}/builds/uploads/x/y`, "uploads");
    expect(uploads).toMatch(/is outside the server's image directory/);
    expect(await buildFrom(`oci:${images}/../../../${env.stateDir}`, "dotdot")).toMatch(/is outside the server's image directory/);
  });

  it("that lead out through a symbolic link in the image directory are refused", { timeout: 120_000 }, async () => {
    symlinkSync(join(env.stateDir, "api-key"), join(images, "api-key.tar"));
    expect(await buildFrom(`docker-archive:${images}/api-key.tar`, "link")).toMatch(/is outside the server's image directory/);
  });

  it("inside an image, a symbolic link is never followed and its target never quoted", { timeout: 120_000 }, async () => {
    const tarball = ociImage("index-link.tar", [{ path: "etc/x", body: "x" }], (layout) => {
      rmSync(join(layout, "index.json"));
      symlinkSync(join(env.stateDir, "api-key"), join(layout, "index.json"));
    });
    const message = await buildFrom(`oci-archive:${tarball}`, "indexlink");
    expect(message).toBe("'index.json' in the image is a symbolic link; image files must be regular files");
    expect(message).not.toContain(env.apiKey);
  });
});

describe("image whiteouts", () => {
  it.each([
    [".wh..", "parent"],
    [".wh.", "empty"],
    [".wh...", "dots"],
  ])("refuses a layer entry %s (%s) and leaves the layers root alone", { timeout: 300_000 }, async (entry, label) => {
    const layersBefore = readdirSync(layersDir).filter((n) => !n.startsWith(".tmp-"));
    const tarball = ociImage(`wh-${label}.tar`, [
      { path: "etc/", type: "Directory" },
      { path: "etc/kept", body: "kept\n" },
      { path: entry, body: "" },
    ]);
    const message = await buildFrom(`oci-archive:${tarball}`, `wh${label}`);
    expect(message).toBe(`image layer has an invalid whiteout '/${entry}': it must name an entry of its directory`);
    await serverStillWorks(layersBefore);
  });

  it("still honours ordinary whiteouts", { timeout: 120_000 }, async () => {
    const tarball = ociImage("wh-ok.tar", [
      { path: "etc/", type: "Directory" },
      { path: "etc/kept", body: "kept\n" },
      { path: "etc/.wh.gone", body: "" },
    ]);
    expect(await buildFrom(`oci-archive:${tarball}`, "whok")).toBe("ready");
  });
});
