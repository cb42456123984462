// Where this process sits in each cgroup hierarchy, and which layout the host has:
//   v2     – /sys/fs/cgroup is cgroup2 with the memory controller: one directory does everything.
//   hybrid – v1 hierarchies carry the controllers, plus a cgroup2 mount without them that still offers
//            cgroup.freeze / cgroup.kill / cgroup.events (these machines: systemd's "hybrid" layout).
//   v1     – v1 only: limits from v1 controllers, freezing and killing through the v1 freezer.
// Paths come from /proc/self/mountinfo and /proc/self/cgroup, so nothing assumes /sys/fs/cgroup.
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { readOptional, readText } from "./cgroup-fs.js";

export type CgroupLayoutKind = "v1" | "v2" | "hybrid";

/** v1 controllers Burrow uses; others (cpuset, devices, blkio, …) are left alone. */
export const V1_CONTROLLERS = ["memory", "cpu", "cpuacct", "pids", "freezer"] as const;
export type V1Controller = (typeof V1_CONTROLLERS)[number];

export interface CgroupLayout {
  readonly kind: CgroupLayoutKind;
  /** This process's cgroup directory in each v1 hierarchy it can use (co-mounted ones share a dir). */
  readonly v1: ReadonlyMap<V1Controller, string>;
  /** This process's cgroup2 directory, when there is a cgroup2 mount. */
  readonly v2: string | undefined;
  /** Controllers available to children of the v2 directory (`cgroup.controllers`). */
  readonly v2Controllers: readonly string[];
}

interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    const [pre, post] = line.split(" - ");
    if (!pre || !post) continue;
    const f = pre.split(" ");
    const [fsType, , superOpts] = post.split(" ");
    if (f[3] === undefined || f[4] === undefined || fsType === undefined) continue;
    mounts.push({ root: unescape(f[3]), mountPoint: unescape(f[4]), fsType, superOptions: (superOpts ?? "").split(",") });
  }
  return mounts;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** The directory of cgroup `path` under a mount of that hierarchy, if the mount shows it. */
function dirIn(mounts: Mount[], path: string): string | undefined {
  for (const m of mounts) {
    if (m.root === "/") return join(m.mountPoint, path);
    if (path === m.root || path.startsWith(`${m.root}/`)) return join(m.mountPoint, path.slice(m.root.length));
  }
  return undefined;
}

export async function detectLayout(): Promise<CgroupLayout> {
  const mounts = parseMountinfo(await readText("/proc/self/mountinfo"));
  const memberships = (await readText("/proc/self/cgroup")).split("\n").filter((l) => l !== "");
  const v1 = new Map<V1Controller, string>();
  let v2: string | undefined;
  for (const line of memberships) {
    const first = line.indexOf(":");
    const second = line.indexOf(":", first + 1);
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    if (controllers === "") {
      v2 = dirIn(mounts.filter((m) => m.fsType === "cgroup2"), path);
      continue;
    }
    for (const c of controllers.split(",")) {
      if (!(V1_CONTROLLERS as readonly string[]).includes(c)) continue;
      const dir = dirIn(mounts.filter((m) => m.fsType === "cgroup" && m.superOptions.includes(c)), path);
      if (dir !== undefined) v1.set(c as V1Controller, dir);
    }
  }
  const v2Controllers =
    v2 === undefined ? [] : ((await readOptional(join(v2, "cgroup.controllers"))) ?? "").trim().split(/\s+/).filter(Boolean);
  if (v1.has("memory")) {
    return { kind: v2 === undefined ? "v1" : "hybrid", v1, v2, v2Controllers };
  }
  if (v2 !== undefined && v2Controllers.includes("memory")) return { kind: "v2", v1: new Map(), v2, v2Controllers };
  throw new BurrowError(Code.FailedPrecondition, "no memory controller in a v1 hierarchy or in cgroup2 is available to this process", { reason: "unsupported_layout" });
}
