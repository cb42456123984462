// Layers are immutable and content-addressed: a new one is assembled under a temporary name in the layers
// directory and renamed into place in one step, so a killed build never leaves a half-written layer under a
// real id, and two builds producing the same key at once keep exactly one copy.
import { randomBytes } from "node:crypto";
import { mkdir, rename, stat } from "node:fs/promises";
import { join } from "node:path";
import { removeTree } from "../../storage/remove-tree.js";

/** Prefix of in-progress layer directories; garbage collection removes ones no running build owns. */
export const TMP_LAYER_PREFIX = ".tmp-";

export async function layerExists(layersRoot: string, layerId: string): Promise<boolean> {
  return stat(join(layersRoot, layerId)).then(
    (st) => st.isDirectory(),
    () => false,
  );
}

/** A fresh temporary directory inside the layers root (same filesystem, so the final rename is atomic). */
export async function makeTmpLayerDir(layersRoot: string, purpose: string): Promise<string> {
  const dir = join(layersRoot, `${TMP_LAYER_PREFIX}${purpose}-${randomBytes(6).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/**
 * Move a finished directory into place as layer `layerId`. When the layer appeared meanwhile (a concurrent
 * build with the same key), ours is discarded: both are the same content by construction.
 */
export async function commitLayerDir(layersRoot: string, layerId: string, dir: string): Promise<void> {
  try {
    await rename(dir, join(layersRoot, layerId));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === "ENOTEMPTY" || code === "EEXIST") && (await layerExists(layersRoot, layerId))) {
      // Ours may be a RUN step's files, written by a sandbox: removed with removeTree, and when even that fails
      // it stays inside the build's temporary directory, which the build or garbage collection removes.
      await removeTree(dir).catch(() => undefined);
      return;
    }
    throw error;
  }
}
