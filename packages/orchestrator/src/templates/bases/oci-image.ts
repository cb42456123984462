// Import a local OCI image layout (directory or tarball) or a `docker save` archive as layers: no registry and
// no Docker engine are needed. Each image layer becomes one read-only layer keyed by its parent and digest, so
// importing the same image twice reuses everything.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { RootfsError } from "../../rootfs/rootfs-error.js";
import { runCommand } from "../../rootfs/run-command.js";
import { shiftOwnership } from "../../rootfs/shift-ownership.js";
import { commitLayerDir, layerExists, makeTmpLayerDir } from "../builder/commit-layer.js";
import { layerIdForKey } from "../builder/build-state.js";
import { TemplateBuildError } from "../builder/template-build-error.js";
import { convertWhiteouts } from "./whiteouts.js";

export interface ImageConfig {
  env: Record<string, string>;
  user?: string | undefined;
  workdir?: string | undefined;
  /** Entrypoint + Cmd joined for a shell, when the image has one. */
  command?: string | undefined;
}

export interface ImportedImage {
  /** Layer ids, top first. */
  layers: string[];
  /** Chain key of the top layer: the image's identity for the build cache. */
  identity: string;
  config: ImageConfig;
}

export interface ImportOptions {
  layersRoot: string;
  uidBase: number;
  uidCount: number;
  log: (message: string) => void;
  signal?: AbortSignal | undefined;
}

interface LayerRef {
  file: string;
  digest: string;
}

const MEDIA_INDEX = new Set(["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"]);

const exists = (path: string) => lstat(path).then(() => true, () => false);

export async function importImage(path: string, opts: ImportOptions): Promise<ImportedImage> {
  const st = await lstat(path).catch(() => undefined);
  if (!st) throw new TemplateBuildError("not_found", `image path ${path} does not exist`, { step: "base" });
  let root = path;
  let scratch: string | undefined;
  try {
    if (!st.isDirectory()) {
      scratch = await makeTmpLayerDir(opts.layersRoot, "image");
      opts.log(`unpacking image archive ${path}`);
      await runCommand("tar", ["-xf", path, "-C", scratch], { signal: opts.signal, label: "tar" });
      root = scratch;
    }
    const { layers, configFile } = (await exists(join(root, "index.json")))
      ? await readOciLayout(root)
      : (await exists(join(root, "manifest.json")))
        ? await readDockerArchive(root)
        : failFormat(path);
    const config = configFile ? parseImageConfig(await readFile(configFile, "utf8")) : { env: {} };
    let parentKey = "";
    const ids: string[] = [];
    for (const [index, layer] of layers.entries()) {
      const key = createHash("sha256").update(`oci-layer\n${parentKey}\n${layer.digest}`).digest("hex");
      const layerId = layerIdForKey(key);
      if (await layerExists(opts.layersRoot, layerId)) {
        opts.log(`image layer ${index + 1}/${layers.length} ${layer.digest.slice(0, 19)}: cached`);
      } else {
        opts.log(`image layer ${index + 1}/${layers.length} ${layer.digest.slice(0, 19)}: importing`);
        await importLayer(layer.file, layerId, opts);
      }
      ids.unshift(layerId);
      parentKey = key;
    }
    if (ids.length === 0) throw new TemplateBuildError("invalid_argument", `image ${path} has no layers`, { step: "base" });
    return { layers: ids, identity: `image:${parentKey}`, config };
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

function failFormat(path: string): never {
  throw new TemplateBuildError(
    "invalid_argument",
    `${path} is neither an OCI image layout (index.json) nor a docker-archive (manifest.json)`,
    { step: "base" },
  );
}

async function importLayer(file: string, layerId: string, opts: ImportOptions): Promise<void> {
  const dir = await makeTmpLayerDir(opts.layersRoot, layerId);
  try {
    // GNU tar detects gzip/xz/zstd by content; --numeric-owner keeps the image's ids (the host's names differ).
    await runCommand("tar", ["--numeric-owner", "--xattrs", "--xattrs-include=user.*", "-xpf", file, "-C", dir], {
      signal: opts.signal,
      label: "tar",
    });
    await convertWhiteouts(dir, opts.signal);
    await shiftOwnership(dir, { uidBase: opts.uidBase, uidCount: opts.uidCount, signal: opts.signal });
    await commitLayerDir(opts.layersRoot, layerId, dir);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    if (error instanceof TemplateBuildError) throw error;
    if (error instanceof RootfsError && error.code === "unmappable_owner") {
      // Name the path inside the image, not the temporary directory it was unpacked to.
      const inImage = error.message.replace(`[${error.code}] `, "").replaceAll(dir, "") || "/";
      throw new TemplateBuildError(
        "invalid_argument",
        `image layer ${file} cannot be used: ${inImage.startsWith(" ") ? `/${inImage}` : inImage} (sandboxes map ids 0..${opts.uidCount - 1})`,
        { step: "base", cause: error },
      );
    }
    throw new TemplateBuildError("invalid_argument", `cannot import image layer ${file}: ${(error as Error).message}`, {
      step: "base",
      cause: error,
    });
  }
}

function blobPath(root: string, digest: string): string {
  const [alg, hex] = digest.split(":", 2);
  if (!alg || !hex || !/^[a-z0-9]+$/.test(alg) || !/^[a-f0-9]+$/.test(hex)) {
    throw new TemplateBuildError("invalid_argument", `bad digest '${digest}' in image`, { step: "base" });
  }
  return join(root, "blobs", alg, hex);
}

interface Descriptor {
  mediaType?: string;
  digest: string;
  platform?: { os?: string; architecture?: string };
}

async function readOciLayout(root: string): Promise<{ layers: LayerRef[]; configFile?: string }> {
  let descriptor = pickManifest(JSON.parse(await readFile(join(root, "index.json"), "utf8")) as { manifests?: Descriptor[] });
  for (let depth = 0; depth < 4; depth++) {
    const doc = JSON.parse(await readFile(blobPath(root, descriptor.digest), "utf8")) as {
      mediaType?: string;
      manifests?: Descriptor[];
      layers?: Descriptor[];
      config?: Descriptor;
    };
    if (doc.manifests || (doc.mediaType && MEDIA_INDEX.has(doc.mediaType))) {
      descriptor = pickManifest(doc);
      continue;
    }
    const layers = (doc.layers ?? []).map((l) => ({ file: blobPath(root, l.digest), digest: l.digest }));
    return { layers, ...(doc.config ? { configFile: blobPath(root, doc.config.digest) } : {}) };
  }
  throw new TemplateBuildError("invalid_argument", "image index nests too deeply", { step: "base" });
}

function pickManifest(index: { manifests?: Descriptor[] }): Descriptor {
  const manifests = index.manifests ?? [];
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const pick =
    manifests.find((m) => m.platform?.os === "linux" && m.platform.architecture === arch) ??
    manifests.find((m) => !m.platform) ??
    manifests[0];
  if (!pick) throw new TemplateBuildError("invalid_argument", "image index lists no manifests", { step: "base" });
  return pick;
}

async function readDockerArchive(root: string): Promise<{ layers: LayerRef[]; configFile?: string }> {
  const manifest = JSON.parse(await readFile(join(root, "manifest.json"), "utf8")) as { Config?: string; Layers?: string[] }[];
  const first = manifest[0];
  if (!first?.Layers) throw new TemplateBuildError("invalid_argument", "docker-archive manifest.json lists no image", { step: "base" });
  const layers: LayerRef[] = [];
  for (const rel of first.Layers) {
    const file = join(root, safeRelative(rel));
    layers.push({ file, digest: `sha256:${await sha256File(file)}` });
  }
  return { layers, ...(first.Config ? { configFile: join(root, safeRelative(first.Config)) } : {}) };
}

function safeRelative(rel: string): string {
  if (rel.startsWith("/") || rel.split("/").includes("..")) {
    throw new TemplateBuildError("invalid_argument", `unsafe path '${rel}' in docker-archive`, { step: "base" });
  }
  return rel;
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The parts of an image config a sandbox inherits. */
export function parseImageConfig(text: string): ImageConfig {
  const doc = JSON.parse(text) as { config?: { Env?: string[]; User?: string; WorkingDir?: string; Entrypoint?: string[]; Cmd?: string[] } };
  const c = doc.config ?? {};
  const env: Record<string, string> = {};
  for (const pair of c.Env ?? []) {
    const eq = pair.indexOf("=");
    if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const argv = [...(c.Entrypoint ?? []), ...(c.Cmd ?? [])];
  return {
    env,
    user: c.User || undefined,
    workdir: c.WorkingDir || undefined,
    command: argv.length > 0 ? argv.map(shellQuote).join(" ") : undefined,
  };
}

export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_\/.:=,+-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
