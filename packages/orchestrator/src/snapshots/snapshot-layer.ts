// Snapshots on disk. A snapshot is a template whose top layer is a copy of a sandbox's writable (overlay upper)
// directory, stacked on the layers the sandbox started from. The copy uses reflinks where the filesystem has them
// (btrfs: shared extents, only metadata is written) and keeps owners, modes, xattrs and overlay whiteouts.
//
// The copy is assembled outside the layers directory (template garbage collection removes unknown entries there,
// including other writers' temporary ones), on the same filesystem and subvolume, and renamed into place only
// after the manifest naming it is saved: a collection in between then keeps it.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, readdir, realpath, rename } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import type { SandboxEgress, SnapshotInfo, TemplateInfo } from "../orchestrator-api.js";
import { copyEgressRules } from "../network/egress-rules.js";
import { upgradeLegacyRules } from "../network/legacy-egress-rules.js";
import { removeTree } from "../storage/remove-tree.js";
import { templateInfo, type TemplateManifest } from "../templates/template-store.js";

const run = promisify(execFile);

/** Prefix of in-progress snapshot copies, next to the layers directory. */
const SNAPSHOT_TMP_DIR = ".snapshot-tmp";

/** A template manifest made by a snapshot. Extra fields are kept by the template store as they are. */
export interface SnapshotManifest extends TemplateManifest {
  /** The sandbox this snapshot was taken from. Marks the manifest as a snapshot. */
  snapshotOf: string;
  /** Set on the internal snapshot a fork starts its sandboxes from; not listed as a snapshot. */
  forkOf?: string;
  /** Who the snapshot is charged to (snapshot-charges.ts); absent on uncharged snapshots. */
  owner?: string;
  /** Bytes its layer holds, as charged (du of the copy). */
  sizeBytes?: number;
  /** Its sandbox's egress when taken (TemplateInfo.egress). */
  egress?: SandboxEgress;
}

export function isSnapshotManifest(manifest: TemplateManifest): manifest is SnapshotManifest {
  return typeof (manifest as Partial<SnapshotManifest>).snapshotOf === "string";
}

/** TemplateInfo of a template, with its sandbox's egress when it is a snapshot. */
export function templateInfoWithEgress(manifest: TemplateManifest): TemplateInfo {
  const info = templateInfo(manifest);
  const egress = isSnapshotManifest(manifest) ? manifest.egress : undefined;
  // Snapshots taken before `proxied` existed say it with reserved deny entries.
  return egress ? { ...info, egress: { allowInternetAccess: egress.allowInternetAccess, ...copyEgressRules(upgradeLegacyRules(egress)) } } : info;
}

export function snapshotInfo(manifest: SnapshotManifest): SnapshotInfo {
  return {
    snapshotId: manifest.templateId,
    names: [...manifest.aliases],
    sandboxId: manifest.snapshotOf,
    createdAt: new Date(manifest.createdAt),
    ...(manifest.owner !== undefined ? { owner: manifest.owner } : {}),
    ...(manifest.sizeBytes !== undefined ? { sizeBytes: manifest.sizeBytes } : {}),
  };
}

/** Where snapshot copies are assembled: a sibling of the (resolved) layers directory. */
async function tmpRoot(layersRoot: string): Promise<string> {
  const real = await realpath(layersRoot);
  return join(dirname(real), SNAPSHOT_TMP_DIR);
}

/** Copy a sandbox's upper directory into a temporary directory; commit it with commitSnapshotLayer. */
export async function copyUpper(upper: string, layersRoot: string, signal?: AbortSignal): Promise<string> {
  const root = await tmpRoot(layersRoot);
  await mkdir(root, { recursive: true });
  const dir = join(root, randomBytes(8).toString("hex"));
  try {
    // `cp -a src dst` with dst missing creates dst with src's owner, mode and xattrs (the upper root's owner is the
    // sandbox's shifted root, which overlayfs needs on the merged root).
    await run("cp", ["-a", "--reflink=auto", upper, dir], { signal });
  } catch (error) {
    await removeTree(dir).catch(() => undefined);
    throw error;
  }
  return dir;
}

/**
 * A path, beside the copies, for a read-only snapshot of a sandbox's directory to copy its upper from; it must not
 * exist yet. Removed with removeTree once copied (at start-up with the stale copies when a crash left it).
 */
export async function snapshotViewPath(layersRoot: string): Promise<string> {
  const root = await tmpRoot(layersRoot);
  await mkdir(root, { recursive: true });
  return join(root, `view-${randomBytes(8).toString("hex")}`);
}

/** Move a finished copy into place as layer `layerId` (same filesystem: one rename). */
export async function commitSnapshotLayer(layersRoot: string, layerId: string, dir: string): Promise<void> {
  await rename(dir, join(await realpath(layersRoot), layerId));
}

export async function discardCopy(dir: string): Promise<void> {
  await removeTree(dir);
}

/**
 * Remove copies a killed orchestrator left behind (at start-up, before anything snapshots). Every copy is tried;
 * the ones that could not be removed are reported together (an AggregateError) and tried again at the next start.
 */
export async function removeStaleSnapshotCopies(layersRoot: string): Promise<void> {
  const root = await tmpRoot(layersRoot).catch(() => undefined);
  if (!root || basename(root) !== SNAPSHOT_TMP_DIR) return;
  const failures: unknown[] = [];
  for (const name of await readdir(root).catch(() => [] as string[])) {
    await removeTree(join(root, name)).catch((error: unknown) => failures.push(error));
  }
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} stale snapshot copies in ${root} could not be removed`);
}
