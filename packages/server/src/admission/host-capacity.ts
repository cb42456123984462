// What the host has left, read fresh on every admission: MemAvailable (the kernel's estimate of memory that can be
// used without swapping), the CPU count and the free space of the filesystems sandboxes write to.
import { existsSync, readFileSync } from "node:fs";
import { statfs } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";

export interface HostMemory {
  totalMB: number;
  availableMB: number;
}

export interface HostDisk {
  /** The directory whose filesystem has the least free space. */
  path: string;
  freeMB: number;
}

export interface HostCapacity {
  memory(): HostMemory;
  cpus(): number;
  /** Free space where sandboxes, layers and snapshots are written; undefined when it cannot be read. */
  disk(signal?: AbortSignal): Promise<HostDisk | undefined>;
}

function meminfoMB(text: string, field: string): number | undefined {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
  return match ? Math.floor(Number(match[1]) / 1024) : undefined;
}

/**
 * The running host. The state directory holds the database and the disk image; `<stateDir>/data` is the mounted
 * btrfs image where layers and sandboxes live (a plain directory without btrfs). Either filling up stops sandboxes.
 */
export function systemHostCapacity(stateDir: string): HostCapacity {
  return {
    memory() {
      const text = readFileSync("/proc/meminfo", "utf8");
      const totalMB = meminfoMB(text, "MemTotal") ?? 0;
      return { totalMB, availableMB: meminfoMB(text, "MemAvailable") ?? totalMB };
    },
    cpus: () => availableParallelism(),
    async disk() {
      let least: HostDisk | undefined;
      for (const path of [stateDir, join(stateDir, "data")]) {
        if (!existsSync(path)) continue;
        try {
          const stats = await statfs(path);
          const freeMB = Math.floor((stats.bavail * stats.bsize) / 2 ** 20);
          if (!least || freeMB < least.freeMB) least = { path, freeMB };
        } catch {
          // Unreadable (being unmounted): the other one still tells.
        }
      }
      return least;
    },
  };
}
