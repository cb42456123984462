// Small helpers over cgroupfs. Cgroup files are tiny and served by the kernel, so every access is a
// single read or write; errors are wrapped with the path, which is what an operator needs.
import { access, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { BurrowError, Code } from "@burrow/protocol";

export async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (e) {
    throw new BurrowError(Code.Internal, `cannot read ${path}: ${(e as Error).message}`, { reason: "cgroup_io", cause: e });
  }
}

export async function writeText(path: string, value: string): Promise<void> {
  try {
    await writeFile(path, value);
  } catch (e) {
    throw new BurrowError(Code.Internal, `cannot write '${value}' to ${path}: ${(e as Error).message}`, { reason: "cgroup_io", cause: e });
  }
}

/** Read a file that may not exist on this kernel or layout; undefined when missing. */
export async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new BurrowError(Code.Internal, `cannot read ${path}: ${(e as Error).message}`, { reason: "cgroup_io", cause: e });
  }
}

/** Whether a file exists; for write-only files such as cgroup.kill, which cannot be read to probe them. */
export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

export async function ensureDir(path: string): Promise<void> {
  try {
    await mkdir(path, { recursive: true });
  } catch (e) {
    throw new BurrowError(Code.Internal, `cannot create ${path}: ${(e as Error).message}`, { reason: "cgroup_io", cause: e });
  }
}

/** Pids listed in `<dir>/cgroup.procs`; a missing dir has none. */
export async function readPids(dir: string): Promise<number[]> {
  const text = await readOptional(join(dir, "cgroup.procs"));
  if (text === undefined) return [];
  return text.split("\n").filter((l) => l !== "").map(Number);
}

/** `key value` lines (memory.stat, cpu.stat, cgroup.events) as a map. */
export function parseKeyValues(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [key, value] = line.split(" ");
    if (key && value !== undefined) map.set(key, Number(value));
  }
  return map;
}

/** Sub-directories (child cgroups) of a cgroup directory; none when it does not exist. */
export async function childDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new BurrowError(Code.Internal, `cannot list ${dir}: ${(e as Error).message}`, { reason: "cgroup_io", cause: e });
  }
}

export interface WaitOptions {
  signal?: AbortSignal | undefined;
  timeoutMs: number;
  /** What is being waited for, for the error message. */
  what: string;
}

/**
 * Poll `done` until it holds. The kernel completes freezing, killing and cgroup removal asynchronously and
 * gives no cheap notification on v1, so we poll, starting at 1 ms (these usually finish in a few ms) and
 * backing off to 20 ms.
 */
export async function waitUntil(done: () => Promise<boolean>, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let delay = 1;
  for (;;) {
    if (opts.signal?.aborted) throw new BurrowError(Code.Canceled, `aborted waiting for ${opts.what}`, { cause: opts.signal.reason });
    if (await done()) return;
    if (Date.now() > deadline) throw new BurrowError(Code.DeadlineExceeded, `timed out after ${opts.timeoutMs} ms waiting for ${opts.what}`, { reason: "cgroup_timeout" });
    try {
      await sleep(delay, undefined, { signal: opts.signal });
    } catch {
      // Aborted while sleeping: reported at the top of the loop.
    }
    delay = Math.min(delay * 2, 20);
  }
}

/**
 * Remove a cgroup directory and any child cgroups, deepest first. rmdir fails with EBUSY for a short while
 * after the last process exits (the kernel still tears it down), so retry until `timeoutMs`.
 */
export async function removeTree(dir: string, timeoutMs: number): Promise<void> {
  for (const child of await childDirs(dir)) await removeTree(join(dir, child), timeoutMs);
  await waitUntil(
    async () => {
      try {
        await rmdir(dir);
        return true;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return true;
        if (code !== "EBUSY" && code !== "ENOTEMPTY") {
          throw new BurrowError(Code.Internal, `cannot remove ${dir}: ${(e as Error).message}`, { reason: "cgroup_io", cause: e });
        }
        return false;
      }
    },
    { timeoutMs, what: `removal of ${dir} (the kernel still reports it busy)` },
  );
}
