// Builds what sandbox tests need once per machine: the launcher binary and the uid-shifted base
// rootfs, kept under the rootfs cache dir so later test runs only pay for a stat.
import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { buildNative } from "../../src/launcher/index.js";
import { buildBaseRootfs, DEFAULT_ROOTFS_CACHE_DIR } from "../../src/rootfs/index.js";
import { baseRecipeKey } from "../../src/rootfs/base-recipe.js";

export const TEST_UID_BASE = 100000;
export const TEST_UID_COUNT = 65536;

/** The shared, read-only lower layer for sandbox tests. Never write into it. */
export async function ensureTestRootfs(signal?: AbortSignal): Promise<string> {
  await buildNative(signal ? { signal } : {});
  const parent = join(DEFAULT_ROOTFS_CACHE_DIR, "test-layers");
  const name = `base-${baseRecipeKey()}-${TEST_UID_BASE}`;
  const dir = join(parent, name);
  if (existsSync(dir)) return dir;
  // Layers of earlier recipes are dead weight (300 MB each).
  for (const old of await readdir(parent).catch(() => [] as string[])) {
    if (old !== name && old.startsWith("base-")) await rm(join(parent, old), { recursive: true, force: true });
  }
  try {
    await buildBaseRootfs({ outDir: dir, uidBase: TEST_UID_BASE, signal, log: (l) => console.log(l) });
  } catch (err) {
    // Another test process finished first: its tree is as good as ours.
    if (!(err instanceof BurrowError && err.code === Code.AlreadyExists)) throw err;
  }
  return dir;
}
