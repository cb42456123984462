import { execFile } from "node:child_process";

/** Bytes used by a directory tree (du's apparent block usage). Returns 0 when the tree is gone. */
export function diskUsageBytes(dir: string, signal?: AbortSignal): Promise<number> {
  return new Promise((resolve) => {
    execFile("du", ["-s", "-B1", "-x", dir], { signal }, (error, stdout) => {
      if (error && !stdout) return resolve(0);
      resolve(Number.parseInt(stdout.split("\t")[0] ?? "0", 10) || 0);
    });
  });
}
