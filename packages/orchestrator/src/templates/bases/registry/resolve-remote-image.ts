// From a reference to what a build needs: the platform's manifest (an index or manifest list is resolved to
// linux/<this machine's architecture>), its layers bottom first, and its config. Configs are small but are blobs
// too: they are kept by digest so that pulling an image a second time downloads no blob at all.
import { mkdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "../../builder/template-build-error.js";
import { formatImageReference, type ImageReference } from "./image-reference.js";
import type { RegistryClient } from "./registry-client.js";

export interface RemoteLayer {
  digest: string;
  size: number | undefined;
  mediaType: string;
}

export interface RemoteImage {
  reference: ImageReference;
  /** Digest of the platform manifest the layers come from. */
  manifestDigest: string;
  /** Bottom layer first. */
  layers: RemoteLayer[];
  /** The image config document (JSON text). */
  configText: string;
}

const INDEX_TYPES = new Set(["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"]);
const MANIFEST_TYPES = new Set(["application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"]);
const LAYER_TYPES = new Set([
  "application/vnd.oci.image.layer.v1.tar",
  "application/vnd.oci.image.layer.v1.tar+gzip",
  "application/vnd.oci.image.layer.v1.tar+zstd",
  "application/vnd.docker.image.rootfs.diff.tar.gzip",
  "application/vnd.docker.image.rootfs.diff.tar",
]);

interface Descriptor {
  mediaType?: string;
  digest?: string;
  size?: number;
  platform?: { os?: string; architecture?: string; variant?: string };
}

/** This machine's architecture as OCI names it. */
export function ociArchitecture(arch: string = process.arch): string {
  return ({ x64: "amd64", ia32: "386", arm64: "arm64", arm: "arm" } as Record<string, string>)[arch] ?? arch;
}

function bad(ref: ImageReference, why: string): TemplateBuildError {
  return new TemplateBuildError(Code.InvalidArgument, `image ${formatImageReference(ref)} cannot be used: ${why}`, { step: "base" });
}

export async function resolveRemoteImage(
  client: RegistryClient,
  ref: ImageReference,
  opts: { configCacheDir: string; architecture?: string },
): Promise<RemoteImage> {
  const arch = opts.architecture ?? ociArchitecture();
  let target = ref.digest ?? ref.tag ?? "latest";
  for (let depth = 0; depth < 3; depth++) {
    const { body, mediaType, digest } = await client.manifest(ref, target);
    let doc: { schemaVersion?: number; manifests?: Descriptor[]; layers?: Descriptor[]; config?: Descriptor };
    try {
      doc = JSON.parse(body) as typeof doc;
    } catch {
      throw bad(ref, "its manifest is not JSON");
    }
    if (INDEX_TYPES.has(mediaType) || (doc.manifests && !doc.layers)) {
      const platforms = (doc.manifests ?? []).filter((m) => m.platform?.os === "linux" && m.platform.architecture === arch);
      const pick = platforms.find((m) => !m.platform?.variant || arch !== "arm64" || m.platform.variant === "v8") ?? platforms[0];
      if (!pick?.digest) {
        const offered = (doc.manifests ?? []).map((m) => `${m.platform?.os ?? "?"}/${m.platform?.architecture ?? "?"}`).join(", ");
        throw bad(ref, `it has no linux/${arch} variant (it offers ${offered || "none"})`);
      }
      target = pick.digest;
      continue;
    }
    if (doc.schemaVersion === 1 || !MANIFEST_TYPES.has(mediaType)) {
      throw bad(ref, `its manifest type '${mediaType || `schema ${doc.schemaVersion}`}' is not supported (OCI or Docker schema 2 only)`);
    }
    const layers: RemoteLayer[] = [];
    for (const layer of doc.layers ?? []) {
      if (!layer.digest || !layer.mediaType) throw bad(ref, "a layer has no digest or media type");
      if (!LAYER_TYPES.has(layer.mediaType)) throw bad(ref, `layer ${layer.digest} has media type ${layer.mediaType} (foreign or non-distributable layers are not supported)`);
      layers.push({ digest: layer.digest, size: layer.size, mediaType: layer.mediaType });
    }
    if (layers.length === 0) throw bad(ref, "it has no layers");
    if (!doc.config?.digest) throw bad(ref, "its manifest names no config");
    const configText = await cachedConfig(client, ref, doc.config.digest, doc.config.size, opts.configCacheDir);
    return { reference: ref, manifestDigest: digest, layers, configText };
  }
  throw bad(ref, "its index nests too deeply");
}

async function cachedConfig(client: RegistryClient, ref: ImageReference, digest: string, size: number | undefined, dir: string): Promise<string> {
  const hex = /^sha256:([a-f0-9]{64})$/.exec(digest)?.[1];
  if (!hex) throw bad(ref, `config digest '${digest}' is not a sha256 digest`);
  const file = join(dir, `${hex}.json`);
  const cached = await readFile(file, "utf8").catch(() => undefined);
  if (cached !== undefined) return cached;
  await mkdir(dir, { recursive: true });
  const part = `${file}.${randomBytes(4).toString("hex")}.part`;
  try {
    await client.downloadBlob(ref, digest, part, size);
    await rename(part, file);
  } finally {
    await rm(part, { force: true });
  }
  return readFile(file, "utf8");
}
