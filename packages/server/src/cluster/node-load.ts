// What a node reports about itself on each heartbeat. Placement (placement.ts) chooses by it.
import { readFile } from "node:fs/promises";
import { availableParallelism, freemem } from "node:os";
import type { CpuUse } from "./cpu-use.js";
import type { NodeLoad, PoolFillEntry } from "./node-record.js";

/** MemAvailable (what the kernel could give without swapping), which os.freemem's MemFree understates. */
async function availableMemory(): Promise<number> {
  try {
    const meminfo = await readFile("/proc/meminfo", "utf8");
    const kb = /^MemAvailable:\s+(\d+) kB/m.exec(meminfo)?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    // Not Linux, or /proc unreadable: MemFree is the next best figure.
  }
  return freemem();
}

export interface LoadSources {
  runningSandboxes: () => number;
  /** The orchestrator's pools (warm and prestarted), read from its memory. */
  poolFill: () => readonly PoolFillEntry[];
  /** Its admission's limit of live sandboxes. */
  capacity?: number;
  /** Ids and aliases of the templates it has (snapshots included). */
  templates?: () => string[];
  /** vCPUs of the running sandboxes. */
  committedVcpu?: () => number;
}

/** `cpu`: the node's sampler, kept between heartbeats (its figure is the use since the previous one). */
export async function sampleNodeLoad(sources: LoadSources, cpu?: CpuUse): Promise<NodeLoad> {
  const busy = await cpu?.sample();
  return {
    freeMemoryBytes: await availableMemory(),
    runningSandboxes: sources.runningSandboxes(),
    // Prepared sandboxes (template "*") serve any template: they are not a pool of one.
    poolFill: sources.poolFill().filter(({ template }) => template !== "*").map(({ template, ready, target }) => ({ template, ready, target })),
    ...(sources.capacity !== undefined ? { capacity: sources.capacity } : {}),
    ...(sources.templates ? { templates: sources.templates() } : {}),
    ...(sources.committedVcpu ? { cpu: { cpus: availableParallelism(), committedVcpu: sources.committedVcpu(), ...(busy !== undefined ? { busy } : {}) } } : {}),
  };
}
