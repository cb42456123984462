// A template base pulled from a registry (`fromImage('python:3.12-slim')`, Dockerfile `FROM node:20`): the
// platform's manifest is resolved, and only layers not imported before are downloaded (digest-checked, into
// scratch space beside the layers) and unpacked like any image layer.
import { join } from "node:path";
import { rm } from "node:fs/promises";
import { makeTmpLayerDir } from "../builder/commit-layer.js";
import { importLayerChain, parseImageConfig, type ImportedImage, type ImportOptions } from "./oci-image.js";
import { formatImageReference, parseImageReference } from "./registry/image-reference.js";
import { RegistryClient, type RegistryCredentials } from "./registry/registry-client.js";
import type { RegistryOptions } from "./registry/registry-options.js";
import { resolveRemoteImage } from "./registry/resolve-remote-image.js";

export interface PullOptions extends ImportOptions {
  registries: RegistryOptions;
  credentials?: RegistryCredentials | undefined;
  /** Where image configs are kept by digest. */
  configCacheDir: string;
}

export async function pullImage(image: string, opts: PullOptions): Promise<ImportedImage & { reference: string }> {
  const ref = parseImageReference(image);
  const name = formatImageReference(ref);
  const client = new RegistryClient({ options: opts.registries, credentials: opts.credentials, signal: opts.signal });
  opts.log(`resolving ${name}`);
  const remote = await resolveRemoteImage(client, ref, { configCacheDir: opts.configCacheDir });
  opts.log(`pulling ${name} (manifest ${remote.manifestDigest.slice(0, 19)}, ${remote.layers.length} layers)`);
  const chain = await importLayerChain(
    remote.layers.map((layer) => ({
      digest: layer.digest,
      open: async () => {
        const dir = await makeTmpLayerDir(opts.layersRoot, "pull");
        const file = join(dir, "layer");
        const size = layer.size !== undefined ? ` (${(layer.size / 1048576).toFixed(1)} MiB)` : "";
        opts.log(`downloading layer ${layer.digest.slice(0, 19)}${size}`);
        try {
          await client.downloadBlob(ref, layer.digest, file, layer.size);
        } catch (error) {
          await rm(dir, { recursive: true, force: true });
          throw error;
        }
        return { file, release: () => rm(dir, { recursive: true, force: true }) };
      },
    })),
    opts,
  );
  return { ...chain, config: parseImageConfig(remote.configText), reference: name };
}
