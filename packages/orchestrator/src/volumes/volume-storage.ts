// Where volumes live on this host: one directory per volume under <stateDir>/volumes, on the btrfs image a
// subvolume of its own with a qgroup limit (the volume's size: writes past it fail with EDQUOT inside every sandbox
// that mounts it and in the content API). A volume is never inside a sandbox's directory, so snapshots, forks and
// checkpoints of a sandbox's writable layer never copy it: a sandbox holds a mount of it, by reference.
import { chmod, chown, lstat, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { removeTree } from "../storage/remove-tree.js";

/** Volume ids are made by the control plane; only this shape ever becomes a host path. */
const VOLUME_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Owner of a new volume's root inside sandboxes: `user` (uid 1000) of the base template; root may write it too. */
export const VOLUME_ROOT_UID = 1000;

export function volumesDir(stateDir: string): string {
  return join(stateDir, "volumes");
}

/** Host directory of a volume (it may not exist). Throws InvalidArgument for an id that is not a volume id. */
export function volumeDir(stateDir: string, volumeId: string): string {
  if (!VOLUME_ID.test(volumeId)) throw new BurrowError(Code.InvalidArgument, `'${volumeId}' is not a volume id`, { reason: "bad_volume_id" });
  return join(volumesDir(stateDir), volumeId);
}

export class VolumeStorage {
  constructor(
    private readonly deps: {
      stateDir: string;
      storage: SandboxStorage;
      /** Host uid that is uid 0 in sandboxes on disk (the canonical ids files carry). */
      uidBase: number;
    },
  ) {}

  /** Host directory of a volume, or undefined when it does not exist here. */
  async dir(volumeId: string): Promise<string | undefined> {
    const dir = volumeDir(this.deps.stateDir, volumeId);
    const st = await lstat(dir).catch(() => undefined);
    return st?.isDirectory() ? dir : undefined;
  }

  /** Create a volume's directory with its size limit. Idempotent for a directory that exists already. */
  async create(volumeId: string, sizeMB: number): Promise<string> {
    const dir = volumeDir(this.deps.stateDir, volumeId);
    await mkdir(volumesDir(this.deps.stateDir), { recursive: true, mode: 0o711 });
    if (!(await this.dir(volumeId))) {
      try {
        await this.deps.storage.createWritableDir(dir);
        await this.deps.storage.applyQuota(dir, sizeMB);
        const owner = this.deps.uidBase + VOLUME_ROOT_UID;
        await chown(dir, owner, owner);
        await chmod(dir, 0o755);
      } catch (error) {
        await removeTree(dir).catch(() => undefined);
        throw new BurrowError(Code.Internal, `volume ${volumeId} could not be created: ${(error as Error).message}`, {
          reason: "volume_create_failed",
          cause: error,
        });
      }
    }
    return dir;
  }

  /** Delete a volume's files for good (a missing one is not an error). The caller makes sure no sandbox mounts it. */
  async remove(volumeId: string, signal?: AbortSignal): Promise<void> {
    await removeTree(volumeDir(this.deps.stateDir, volumeId), { signal });
  }
}
