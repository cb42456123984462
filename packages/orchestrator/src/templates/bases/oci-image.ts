// Import a local OCI image layout (directory or tarball) or a `docker save` archive as layers: no registry and
// no Docker engine are needed. Each image layer becomes one read-only layer keyed by its parent and digest, so
// importing the same image twice reuses everything.
//
// The path itself was checked against the operator's image directory (image-path-policy.ts); inside the image
// root nothing is followed through a symbolic link (image-root.ts), and layer tarballs are unpacked by GNU tar,
// which will not write through links it created, into a fresh directory.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, rm } from "node:fs/promises";
import { BurrowError, Code } from "@burrow/protocol";
import { runCommand } from "../../rootfs/run-command.js";
import { shiftOwnership } from "../../rootfs/shift-ownership.js";
import { commitLayerDir, layerExists, makeTmpLayerDir } from "../builder/commit-layer.js";
import { layerIdForKey } from "../builder/build-state.js";
import { TemplateBuildError } from "../builder/template-build-error.js";
import { imageFile, readImageJson, requireImageFile } from "./image-root.js";
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

/** `path` must already be allowed (checkImagePath): it is opened as given. */
export async function importImage(path: string, opts: ImportOptions): Promise<ImportedImage> {
  const st = await lstat(path).catch(() => undefined);
  if (!st) throw new TemplateBuildError(Code.NotFound, `image path ${path} does not exist`, { step: "base" });
  let root = path;
  let scratch: string | undefined;
  try {
    if (!st.isDirectory()) {
      scratch = await makeTmpLayerDir(opts.layersRoot, "image");
      opts.log(`unpacking image archive ${path}`);
      const dir = scratch;
      await runCommand("tar", ["-xf", path, "-C", dir], { signal: opts.signal, label: "tar" }).catch((error: unknown) => {
        if (opts.signal?.aborted) throw error;
        const message = String((error as Error).message).replaceAll(dir, "");
        throw new TemplateBuildError(Code.InvalidArgument, `image archive ${path} cannot be unpacked: ${message}`, { step: "base", cause: error });
      });
      root = scratch;
    }
    const { layers, configFile } = (await imageFile(root, "index.json"))
      ? await readOciLayout(root)
      : (await imageFile(root, "manifest.json"))
        ? await readDockerArchive(root)
        : failFormat(path);
    const config = configFile ? parseImageConfig(await readImageJson<unknown>(root, configFile)) : { env: {} };
    if (layers.length === 0) throw new TemplateBuildError(Code.InvalidArgument, `image ${path} has no layers`, { step: "base" });
    const chain = await importLayerChain(
      layers.map((layer) => ({ digest: layer.digest, open: async () => ({ file: layer.file, release: async () => undefined }) })),
      opts,
    );
    return { ...chain, config };
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

/** One image layer of a chain: its digest, and how to get its tarball when it is not imported yet. */
export interface ChainLayer {
  digest: string;
  /** The layer's tar (plain, gzip or zstd) and what to do once it is imported; called only for uncached layers. */
  open(): Promise<{ file: string; release(): Promise<void> }>;
}

/**
 * Import layers bottom first. Each becomes one read-only layer keyed by its parent's key and its digest, so an
 * image imported from a file and the same image pulled from a registry share their layers, and a second import
 * or pull fetches nothing.
 */
export async function importLayerChain(layers: readonly ChainLayer[], opts: ImportOptions): Promise<{ layers: string[]; identity: string }> {
  let parentKey = "";
  const ids: string[] = [];
  for (const [index, layer] of layers.entries()) {
    const key = createHash("sha256").update(`oci-layer\n${parentKey}\n${layer.digest}`).digest("hex");
    const layerId = layerIdForKey(key);
    if (await layerExists(opts.layersRoot, layerId)) {
      opts.log(`image layer ${index + 1}/${layers.length} ${layer.digest.slice(0, 19)}: cached`);
    } else {
      opts.log(`image layer ${index + 1}/${layers.length} ${layer.digest.slice(0, 19)}: importing`);
      const { file, release } = await layer.open();
      try {
        await importLayer({ file, digest: layer.digest }, layerId, opts);
      } finally {
        await release();
      }
    }
    ids.unshift(layerId);
    parentKey = key;
  }
  return { layers: ids, identity: `image:${parentKey}` };
}

function failFormat(path: string): never {
  throw new TemplateBuildError(
    Code.InvalidArgument,
    `${path} is neither an OCI image layout (index.json) nor a docker-archive (manifest.json)`,
    { step: "base" },
  );
}

async function importLayer(layer: LayerRef, layerId: string, opts: ImportOptions): Promise<void> {
  const { file } = layer;
  // Named by digest in messages: `file` may be a path in scratch space.
  const name = layer.digest.slice(0, 19);
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
    if (error instanceof BurrowError && error.reason === "unmappable_owner") {
      // Name the path inside the image, not the temporary directory it was unpacked to.
      const inImage = error.message.replaceAll(dir, "") || "/";
      throw new TemplateBuildError(
        Code.InvalidArgument,
        `image layer ${name} cannot be used: ${inImage.startsWith(" ") ? `/${inImage}` : inImage} (sandboxes map ids 0..${opts.uidCount - 1})`,
        { step: "base", cause: error },
      );
    }
    const message = String((error as Error).message).replaceAll(dir, "").replaceAll(file, name);
    throw new TemplateBuildError(Code.InvalidArgument, `cannot import image layer ${name}: ${message}`, {
      step: "base",
      cause: error,
    });
  }
}

/** The blob's path relative to the layout root. */
function blobPath(digest: string): string {
  const [alg, hex] = String(digest).split(":", 2);
  if (!alg || !hex || !/^[a-z0-9]+$/.test(alg) || !/^[a-f0-9]+$/.test(hex)) {
    throw new TemplateBuildError(Code.InvalidArgument, `bad digest '${String(digest).slice(0, 100)}' in image`, { step: "base" });
  }
  return `blobs/${alg}/${hex}`;
}

interface Descriptor {
  mediaType?: string;
  digest: string;
  platform?: { os?: string; architecture?: string };
}

/** `configFile` is relative to the image root. */
async function readOciLayout(root: string): Promise<{ layers: LayerRef[]; configFile?: string }> {
  let descriptor = pickManifest(await readImageJson<{ manifests?: Descriptor[] }>(root, "index.json"));
  for (let depth = 0; depth < 4; depth++) {
    const doc = await readImageJson<{
      mediaType?: string;
      manifests?: Descriptor[];
      layers?: Descriptor[];
      config?: Descriptor;
    }>(root, blobPath(descriptor.digest));
    if (doc.manifests || (doc.mediaType && MEDIA_INDEX.has(doc.mediaType))) {
      descriptor = pickManifest(doc);
      continue;
    }
    const layers: LayerRef[] = [];
    for (const l of Array.isArray(doc.layers) ? doc.layers : []) {
      layers.push({ file: await requireImageFile(root, blobPath(l.digest)), digest: l.digest });
    }
    return { layers, ...(doc.config ? { configFile: blobPath(doc.config.digest) } : {}) };
  }
  throw new TemplateBuildError(Code.InvalidArgument, "image index nests too deeply", { step: "base" });
}

function pickManifest(index: { manifests?: Descriptor[] }): Descriptor {
  const manifests = Array.isArray(index?.manifests) ? index.manifests : [];
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const pick =
    manifests.find((m) => m.platform?.os === "linux" && m.platform.architecture === arch) ??
    manifests.find((m) => !m.platform) ??
    manifests[0];
  if (!pick) throw new TemplateBuildError(Code.InvalidArgument, "image index lists no manifests", { step: "base" });
  return pick;
}

async function readDockerArchive(root: string): Promise<{ layers: LayerRef[]; configFile?: string }> {
  const manifest = await readImageJson<{ Config?: string; Layers?: string[] }[]>(root, "manifest.json");
  const first = Array.isArray(manifest) ? manifest[0] : undefined;
  if (!Array.isArray(first?.Layers)) throw new TemplateBuildError(Code.InvalidArgument, "docker-archive manifest.json lists no image", { step: "base" });
  const layers: LayerRef[] = [];
  for (const rel of first.Layers) {
    const file = await requireImageFile(root, String(rel));
    layers.push({ file, digest: `sha256:${await sha256File(file)}` });
  }
  return { layers, ...(typeof first.Config === "string" ? { configFile: first.Config } : {}) };
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The parts of an image config a sandbox inherits. */
export function parseImageConfig(input: unknown): ImageConfig {
  const doc = (typeof input === "string" ? JSON.parse(input) : input) as {
    config?: { Env?: string[]; User?: string; WorkingDir?: string; Entrypoint?: string[]; Cmd?: string[] };
  } | null;
  const c = doc?.config ?? {};
  // The config comes from the image: anything that is not the documented shape is ignored.
  const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []);
  const env: Record<string, string> = {};
  for (const pair of strings(c.Env)) {
    const eq = pair.indexOf("=");
    if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const argv = [...strings(c.Entrypoint), ...strings(c.Cmd)];
  return {
    env,
    user: (typeof c.User === "string" && c.User) || undefined,
    workdir: (typeof c.WorkingDir === "string" && c.WorkingDir) || undefined,
    command: argv.length > 0 ? argv.map(shellQuote).join(" ") : undefined,
  };
}

export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_\/.:=,+-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
