// Local images as bases: an OCI image tarball and a docker-archive, both built here with tar. Layer 1 is the
// base template's root filesystem (any Debian rootfs works; this one is already on disk) with its owners shifted
// back to image ids; layers 2 and 3 add files and delete some with OCI whiteouts, which the import must honour.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
// Host image paths must be under the server's image directory.
const dir = mkdtempSync(join(env.imageDir, "oci-"));
const suffix = Math.random().toString(36).slice(2, 8);
const ociName = `oci-${suffix}`;
const archiveName = `docker-archive-${suffix}`;
/** The three layer files, bottom first, and the image config. */
let layerFiles: string[] = [];
let configJson = "";

afterAll(async () => {
  await deleteTemplate(env, ociName);
  await deleteTemplate(env, archiveName);
  rmSync(dir, { recursive: true, force: true });
});

async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Move `file` into the layout's blob store under its digest. */
async function blobFromFile(layout: string, file: string) {
  const hex = await sha256File(file);
  const size = statSync(file).size;
  renameSync(file, join(layout, "blobs/sha256", hex));
  return { digest: `sha256:${hex}`, size };
}

function blobFromData(layout: string, data: Buffer, mediaType: string) {
  const hex = createHash("sha256").update(data).digest("hex");
  writeFileSync(join(layout, "blobs/sha256", hex), data);
  return { mediaType, digest: `sha256:${hex}`, size: data.length };
}

beforeAll(async () => {
  const base = JSON.parse(readFileSync(join(env.stateDir, "templates", `${await baseTemplateId()}.json`), "utf8")) as { layers: string[] };
  const rootfs = join(env.stateDir, "layers", base.layers[0] as string);
  // On disk the rootfs belongs to the sandbox uid range (its root is host uid `uidBase`); an image has real ids.
  const uidBase = statSync(rootfs).uid;
  const owners = execFileSync("find", [rootfs, "-printf", "%U %G\\n"], { encoding: "utf8", maxBuffer: 64 << 20 });
  const uids = new Set<number>();
  const gids = new Set<number>();
  for (const line of owners.trim().split("\n")) {
    const [u, g] = line.split(" ").map(Number) as [number, number];
    uids.add(u);
    gids.add(g);
  }
  const map = (ids: Set<number>) => [...ids].map((id) => `+${id} +${id - uidBase}\n`).join("");
  writeFileSync(join(dir, "owner-map"), map(uids));
  writeFileSync(join(dir, "group-map"), map(gids));
  execFileSync("tar", [
    "--numeric-owner", `--owner-map=${join(dir, "owner-map")}`, `--group-map=${join(dir, "group-map")}`,
    "-cf", join(dir, "l1.tar"), "-C", rootfs, ".",
  ]);

  // Layer 2: files and directories that layer 3 deletes.
  const l2 = join(dir, "l2");
  mkdirSync(join(l2, "srv/gone"), { recursive: true });
  mkdirSync(join(l2, "srv/opaque"), { recursive: true });
  writeFileSync(join(l2, "srv/gone/file"), "x\n");
  writeFileSync(join(l2, "srv/opaque/old-a"), "a\n");
  writeFileSync(join(l2, "srv/opaque/old-b"), "b\n");
  writeFileSync(join(l2, "srv/kept"), "kept\n");
  execFileSync("tar", ["--owner=0", "--group=0", "--numeric-owner", "-cf", join(dir, "l2.tar"), "-C", l2, "."]);

  // Layer 3 (gzip): a new file, a file whiteout into layer 1, a directory whiteout and an opaque directory.
  const l3 = join(dir, "l3");
  mkdirSync(join(l3, "etc"), { recursive: true });
  mkdirSync(join(l3, "srv/opaque"), { recursive: true });
  writeFileSync(join(l3, "etc/from-oci"), "yes\n");
  writeFileSync(join(l3, "etc/.wh.motd"), "");
  writeFileSync(join(l3, "srv/.wh.gone"), "");
  writeFileSync(join(l3, "srv/opaque/.wh..wh..opq"), "");
  writeFileSync(join(l3, "srv/opaque/new-c"), "c\n");
  execFileSync("tar", ["--owner=0", "--group=0", "--numeric-owner", "-czf", join(dir, "l3.tgz"), "-C", l3, "."]);
  layerFiles = [join(dir, "l1.tar"), join(dir, "l2.tar"), join(dir, "l3.tgz")];
  configJson = JSON.stringify({
    architecture: process.arch === "x64" ? "amd64" : process.arch,
    os: "linux",
    config: { Env: ["FROM_OCI=1", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], User: "user", WorkingDir: "/home/user" },
  });
}, 300_000);

async function checkImageSandbox(name: string): Promise<void> {
  const sandbox = await Sandbox.create(name, conn);
  try {
    const run = async (cmd: string) => (await sandbox.commands.run(cmd)).stdout;
    expect(await run("cat /etc/from-oci /tmp/step /srv/kept")).toBe("yes\nlayered\nkept\n");
    // File whiteout (into layer 1), directory whiteout, opaque directory.
    expect(await run("test -e /etc/motd && echo present || echo gone")).toBe("gone\n");
    expect(await run("test -e /srv/gone && echo present || echo gone")).toBe("gone\n");
    expect(await run("ls /srv/opaque")).toBe("new-c\n");
    // No whiteout markers leak into the filesystem.
    expect(await run("find /srv /etc -maxdepth 2 -name '.wh.*' | wc -l")).toBe("0\n");
    // The image config: env, user and working directory.
    expect(await run("echo $FROM_OCI; whoami; pwd")).toBe("1\nuser\n/home/user\n");
    // Ownership maps into the sandbox: root owns /etc, user owns its home.
    expect(await run("stat -c %U /etc /home/user")).toBe("root\nuser\n");
  } finally {
    await sandbox.kill();
  }
}

describe("local image import", () => {
  it("builds from an OCI image tarball with whiteouts honoured", { timeout: 600_000 }, async () => {
    const layout = join(dir, "layout");
    mkdirSync(join(layout, "blobs/sha256"), { recursive: true });
    const layers = [];
    for (const file of layerFiles) {
      // Copies: the docker-archive test uses the same files.
      execFileSync("cp", [file, `${file}.blob`]);
      const gz = file.endsWith(".tgz");
      layers.push({
        mediaType: gz ? "application/vnd.oci.image.layer.v1.tar+gzip" : "application/vnd.oci.image.layer.v1.tar",
        ...(await blobFromFile(layout, `${file}.blob`)),
      });
    }
    const config = blobFromData(layout, Buffer.from(configJson), "application/vnd.oci.image.config.v1+json");
    const manifest = blobFromData(
      layout,
      Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config, layers })),
      "application/vnd.oci.image.manifest.v1+json",
    );
    writeFileSync(join(layout, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
    writeFileSync(join(layout, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }));
    const tarball = join(dir, "image.tar");
    execFileSync("tar", ["-cf", tarball, "-C", layout, "."]);
    rmSync(layout, { recursive: true, force: true });

    const logs: string[] = [];
    await Template.build(Template().fromImage(`oci-archive:${tarball}`).runCmd("echo layered > /tmp/step"), ociName, {
      ...conn,
      onBuildLogs: (e) => logs.push(e.message),
    });
    expect(logs.filter((l) => /^image layer \d\/3 sha256:[0-9a-f]+…?.*: importing$/.test(l))).toHaveLength(3);
    await checkImageSandbox(ociName);
    rmSync(tarball, { force: true });
  });

  it("builds from a docker-archive; layers already imported are reused", { timeout: 600_000 }, async () => {
    const archive = join(dir, "archive");
    mkdirSync(archive);
    const names = ["l1.tar", "l2.tar", "l3.tgz"];
    for (const [i, file] of layerFiles.entries()) renameSync(file, join(archive, names[i] as string));
    writeFileSync(join(archive, "config.json"), configJson);
    writeFileSync(join(archive, "manifest.json"), JSON.stringify([{ Config: "config.json", RepoTags: ["local/test:1"], Layers: names }]));
    const tarball = join(dir, "archive.tar");
    execFileSync("tar", ["-cf", tarball, "-C", archive, "."]);
    rmSync(archive, { recursive: true, force: true });

    const logs: string[] = [];
    await Template.build(Template().fromImage(`docker-archive:${tarball}`).runCmd("echo layered > /tmp/step"), archiveName, {
      ...conn,
      onBuildLogs: (e) => logs.push(e.message),
    });
    // Same layer contents ⇒ same digests ⇒ the OCI test's layers are reused, and so is its RUN layer.
    expect(logs.filter((l) => /^image layer \d\/3 .*: cached$/.test(l))).toHaveLength(3);
    expect(logs.some((l) => /^CACHED \[1\/1\] RUN echo layered/.test(l))).toBe(true);
    await checkImageSandbox(archiveName);
  });
});

async function baseTemplateId(): Promise<string> {
  const res = await fetch(`${env.apiUrl}/templates/aliases/base`, { headers: { "x-api-key": env.apiKey } });
  return ((await res.json()) as { templateID: string }).templateID;
}
