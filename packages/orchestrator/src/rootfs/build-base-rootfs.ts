// The base template: Debian minbase plus the usual tools, cached as a tarball keyed by the recipe
// so that only the first build on a machine pays for debootstrap (~2 min); later ones extract it.
import { copyFile, lchown, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { BASE_PACKAGES, BASE_SETUP_SCRIPT, BASE_SUITE, baseRecipeKey } from "./base-recipe.js";
import { findDebianMirror, readAptSources, renderSourcesList, sourcesForSuite } from "./apt-sources.js";
import { runCommand, type RootfsLogger } from "./run-command.js";
import { shiftOwnership } from "./shift-ownership.js";

export const DEFAULT_ROOTFS_CACHE_DIR = "/var/cache/burrow";

export interface BuildBaseRootfsOptions {
  /** Where the recipe-keyed tarball is kept. @default "/var/cache/burrow" */
  cacheDir?: string;
  /** The finished, uid-shifted tree. Must not exist yet: layers are immutable. */
  outDir: string;
  /** Host uid that is root inside the sandbox; every file's owner is shifted by it. */
  uidBase: number;
  /** Size of the sandbox uid range. @default 65536 */
  uidCount?: number;
  signal?: AbortSignal | undefined;
  /** Receives progress lines (debootstrap and apt output included). */
  log?: ((line: string) => void) | undefined;
}

/** Path of the cached (unshifted) tarball for the current recipe. */
export function baseRootfsCachePath(cacheDir: string = DEFAULT_ROOTFS_CACHE_DIR): string {
  return join(cacheDir, `base-${BASE_SUITE}-${baseRecipeKey()}.tar`);
}

const exists = (p: string) => stat(p).then(() => true, () => false);

/** Build (or extract from cache) the base template into `outDir`, shifted to `uidBase`. */
export async function buildBaseRootfs(opts: BuildBaseRootfsOptions): Promise<void> {
  const { outDir, uidBase, signal } = opts;
  const log: RootfsLogger | undefined = opts.log ? { info: opts.log } : undefined;
  const cacheDir = opts.cacheDir ?? DEFAULT_ROOTFS_CACHE_DIR;
  if (await exists(outDir)) throw new BurrowError(Code.AlreadyExists, `${outDir} already exists`);
  const tarball = baseRootfsCachePath(cacheDir);
  if (!(await exists(tarball))) await bootstrapToCache(cacheDir, tarball, signal, log);

  // Extract next to outDir so the final rename stays on one filesystem (and so is atomic).
  await mkdir(dirname(outDir), { recursive: true });
  const tmp = await mkdtemp(join(dirname(outDir), `.${basename(outDir)}.tmp-`));
  try {
    const root = join(tmp, "root");
    await mkdir(root);
    log?.info(`rootfs: extracting ${tarball}`);
    await runCommand("tar", ["--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", tarball, "-C", root], {
      signal, log, label: "tar",
    });
    const n = await shiftOwnership(root, { uidBase, uidCount: opts.uidCount ?? 65536, signal });
    log?.info(`rootfs: shifted ${n} entries by ${uidBase}`);
    // Mount point for the runtime dir, so launching never has to create it in a sandbox's upper.
    await mkdir(join(root, ".burrow"), { mode: 0o755 });
    await lchown(join(root, ".burrow"), uidBase, uidBase);
    await rename(root, outDir);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function bootstrapToCache(cacheDir: string, tarball: string, signal?: AbortSignal, log?: RootfsLogger): Promise<void> {
  const sources = await readAptSources();
  const mirror = findDebianMirror(sources, BASE_SUITE);
  await mkdir(cacheDir, { recursive: true });
  await pruneCache(cacheDir, basename(tarball));
  const work = await mkdtemp(join(cacheDir, ".build-"));
  try {
    const root = join(work, "root");
    log?.info(`rootfs: debootstrap ${BASE_SUITE} from ${mirror}`);
    // unshare -m: debootstrap mounts /proc and /sys in the target; a private mount namespace makes
    // them vanish even if the build is killed, so nothing stays mounted on the host.
    await runCommand(
      "unshare",
      ["-m", "--propagation", "private", "debootstrap", "--variant=minbase", `--include=${BASE_PACKAGES.join(",")}`,
        BASE_SUITE, root, mirror],
      { signal, log, label: "debootstrap" },
    );
    await writeFile(join(root, "etc/apt/sources.list"), renderSourcesList(sourcesForSuite(sources, BASE_SUITE)));
    await copyFile("/etc/resolv.conf", join(root, "etc/resolv.conf"));
    await writeFile(join(root, "tmp/burrow-setup.sh"), BASE_SETUP_SCRIPT);
    await runCommand(
      "unshare",
      ["-m", "--propagation", "private", "sh", "-ec",
        `mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"; exec chroot "$1" /bin/sh /tmp/burrow-setup.sh`,
        "sh", root],
      { signal, log, label: "setup", env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8", HOME: "/root" } },
    );
    await rm(join(root, "tmp/burrow-setup.sh"));
    const partial = `${tarball}.${process.pid}.partial`;
    await runCommand("tar", ["--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf", partial, "-C", root, "."], {
      signal, log, label: "tar",
    });
    await rename(partial, tarball);
    log?.info(`rootfs: cached ${tarball}`);
    await pruneCache(cacheDir, basename(tarball));
  } finally {
    // The tree holds device nodes and root-owned files; rm is enough since no mount outlives unshare.
    await rm(work, { recursive: true, force: true });
    await rm(`${tarball}.${process.pid}.partial`, { force: true });
  }
}

/** Build dirs left by a killed build are abandoned after this long (a real build takes minutes). */
const STALE_BUILD_MS = 6 * 3600_000;

/**
 * Drop what earlier recipes and killed builds left: tarballs of other recipes (a new recipe
 * replaces the old one; extracted layers do not need their tarball) and old build dirs.
 */
async function pruneCache(cacheDir: string, keep: string): Promise<void> {
  for (const name of await readdir(cacheDir)) {
    const path = join(cacheDir, name);
    if (/^base-.*\.tar$/.test(name) && name !== keep) {
      await rm(path, { force: true });
    } else if (name.startsWith(".build-")) {
      const st = await stat(path).catch(() => undefined);
      if (st && Date.now() - st.mtimeMs > STALE_BUILD_MS) await rm(path, { recursive: true, force: true });
    }
  }
}
