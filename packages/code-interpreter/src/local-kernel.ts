// A kernel started on this machine outside any server: the baseline of the benchmarks (a direct kernel call
// without HTTP, gateway or sandbox in between) and a tool for debugging kernels.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Kernel } from "./kernels/kernel.js";
import { KernelLauncher } from "./kernels/start-kernel.js";
import { silentLogger } from "./log.js";
import { companionFiles, nodeCommand } from "./paths.js";

export interface LocalKernel {
  kernel: Kernel;
  close(): Promise<void>;
}

export async function startLocalKernel(language: string, cwd: string): Promise<LocalKernel> {
  const runDir = await mkdtemp(join(tmpdir(), "burrow-kernel-"));
  const files = companionFiles();
  const launcher = new KernelLauncher({ nodeCommand: nodeCommand(), workerScript: files.workerScript, pythonDir: files.pythonDir, runDir }, silentLogger);
  try {
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
    const kernel = await launcher.start({ language, cwd, env });
    return {
      kernel,
      async close() {
        await kernel.close();
        await rm(runDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(runDir, { recursive: true, force: true });
    throw error;
  }
}
