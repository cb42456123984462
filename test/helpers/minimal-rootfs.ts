// A small root filesystem for image tests, made from the host's own binaries and the libraries they load: enough
// for the SDK's commands (`/bin/bash -l -c …`) and a few tools, a few megabytes instead of a Debian tree.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const TOOLS = ["/bin/bash", "/bin/sh", "/bin/cat", "/bin/ls", "/bin/echo", "/usr/bin/env", "/usr/bin/id", "/bin/sleep", "/bin/mkdir", "/bin/rm", "/bin/true"];

function libraries(binary: string): string[] {
  const out = execFileSync("ldd", [binary], { encoding: "utf8" });
  return [...out.matchAll(/(\/\S+\.so[.\d]*)/g)].map((m) => m[1] as string);
}

/** Fill `dir` with the tools, their libraries, /etc/passwd and /etc/group (root, user 1000), /tmp and /home/user. */
export function writeMinimalRootfs(dir: string): void {
  const files = new Set<string>();
  for (const tool of TOOLS) {
    files.add(tool);
    for (const lib of libraries(tool)) files.add(lib);
  }
  for (const file of files) {
    const real = execFileSync("readlink", ["-f", file], { encoding: "utf8" }).trim();
    mkdirSync(join(dir, dirname(file)), { recursive: true });
    copyFileSync(real, join(dir, file));
    chmodSync(join(dir, file), 0o755);
  }
  mkdirSync(join(dir, "etc"), { recursive: true });
  writeFileSync(join(dir, "etc/passwd"), "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000:user:/home/user:/bin/bash\n");
  writeFileSync(join(dir, "etc/group"), "root:x:0:\nuser:x:1000:\n");
  for (const d of ["tmp", "root", "home/user", "proc", "sys", "dev"]) mkdirSync(join(dir, d), { recursive: true });
  chmodSync(join(dir, "tmp"), 0o1777);
}

/** A tar of `dir` with every entry owned by 0:0 except /home/user (1000:1000), as an image layer has it. */
export function tarRootfs(dir: string, file: string): void {
  execFileSync("tar", ["--numeric-owner", "--owner=0", "--group=0", "--exclude=./home/user", "-cf", file, "-C", dir, "."]);
  execFileSync("tar", ["--numeric-owner", "--owner=1000", "--group=1000", "-rf", file, "-C", dir, "./home/user"]);
}
