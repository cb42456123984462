// A directory tree deeper than PATH_MAX (4096 bytes): 100 nested directories of 50-character names, built through
// directory file descriptors the way a program in a sandbox can. Path-based tools (fs.rm, cp) fail on it with
// ENAMETOOLONG; the host must still be able to remove it.
import { execFileSync } from "node:child_process";

export const DEEP_LEVELS = 100;
export const DEEP_NAME = "d".repeat(50);

/** A python3 script that builds the tree under `root` (created if missing) and leaves a file at the bottom. */
export function deepTreeScript(root: string): string {
  return [
    "import os",
    `os.makedirs(${JSON.stringify(root)}, exist_ok=True)`,
    `fd = os.open(${JSON.stringify(root)}, os.O_RDONLY | os.O_DIRECTORY)`,
    `for _ in range(${DEEP_LEVELS}):`,
    `    os.mkdir(${JSON.stringify(DEEP_NAME)}, dir_fd=fd)`,
    `    child = os.open(${JSON.stringify(DEEP_NAME)}, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)`,
    "    os.close(fd)",
    "    fd = child",
    'leaf = os.open("bottom.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)',
    'os.write(leaf, b"deep")',
    "os.close(leaf)",
    "os.close(fd)",
    "",
  ].join("\n");
}

/** The same, run on the host (for trees the test itself plants). */
export function buildDeepTreeOnHost(root: string): void {
  execFileSync("python3", ["-c", deepTreeScript(root)]);
}

/** How many levels of the tree exist below `root` on the host, counted fd-relative (0 when it is gone). */
export function deepTreeDepthOnHost(root: string): number {
  const script = [
    "import os, sys",
    "try:",
    `    fd = os.open(${JSON.stringify(root)}, os.O_RDONLY | os.O_DIRECTORY)`,
    "except FileNotFoundError:",
    "    print(0); sys.exit(0)",
    "depth = 0",
    "while True:",
    "    try:",
    `        child = os.open(${JSON.stringify(DEEP_NAME)}, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)`,
    "    except FileNotFoundError:",
    "        break",
    "    os.close(fd)",
    "    fd = child",
    "    depth += 1",
    "print(depth)",
    "",
  ].join("\n");
  return Number(execFileSync("python3", ["-c", script], { encoding: "utf8" }).trim());
}
