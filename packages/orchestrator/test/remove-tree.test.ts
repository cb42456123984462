// removeTree against the real filesystem: trees deeper than PATH_MAX as plain directories and as btrfs subvolumes,
// symlinks that point out of the tree, unreadable directories, mounts inside the tree, cancellation.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { removeTree } from "../src/storage/remove-tree.js";
import { buildDeepTreeOnHost, DEEP_LEVELS, DEEP_NAME, deepTreeDepthOnHost } from "../../../test/helpers/deep-tree.js";

const BTRFS_TOOLS = existsSync("/usr/sbin/mkfs.btrfs") && existsSync("/usr/bin/btrfs");

let work: string;
const mounted: string[] = [];

beforeEach(async () => {
  work = await mkdtemp("/var/tmp/burrow-remove-tree-");
});

afterEach(async () => {
  for (const mountPoint of mounted.splice(0).reverse()) execFileSync("umount", [mountPoint]);
  await rm(work, { recursive: true, force: true });
});

/** A deep tree with what a hostile sandbox might add: a symlink out of the tree and an unreadable directory. */
function plantHostileTree(root: string, outside: string): void {
  buildDeepTreeOnHost(root);
  symlinkSync(outside, join(root, "escape"));
  mkdirSync(join(root, "locked", "inner"), { recursive: true });
  writeFileSync(join(root, "locked", "inner", "file"), "x");
  chmodSync(join(root, "locked"), 0o000);
}

async function rejection(promise: Promise<unknown>): Promise<BurrowError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BurrowError);
  return error as BurrowError;
}

describe("removeTree", () => {
  it("removes a plain directory tree deeper than PATH_MAX without following symlinks out of it", async () => {
    const outside = join(work, "outside.txt");
    writeFileSync(outside, "keep me");
    const root = join(work, "tree");
    plantHostileTree(root, outside);
    expect(deepTreeDepthOnHost(root)).toBe(DEEP_LEVELS);
    // What the orchestrator used before: it cannot take this tree.
    await expect(rm(root, { recursive: true, force: true })).rejects.toThrow(/ENAMETOOLONG/);

    await removeTree(root);

    expect(existsSync(root)).toBe(false);
    expect(readFileSync(outside, "utf8")).toBe("keep me");
  });

  it("is done when the path does not exist, and removes a single file or symlink", async () => {
    await removeTree(join(work, "missing"));
    const file = join(work, "file");
    writeFileSync(file, "x");
    await removeTree(file);
    expect(existsSync(file)).toBe(false);
    const target = join(work, "target");
    mkdirSync(target);
    writeFileSync(join(target, "kept"), "x");
    symlinkSync(target, join(work, "link"));
    await removeTree(join(work, "link"));
    expect(existsSync(join(work, "link"))).toBe(false);
    expect(existsSync(join(target, "kept"))).toBe(true);
  });

  it("never crosses a mount inside the tree: it fails and the mounted files stay", async () => {
    const root = join(work, "tree");
    const mountPoint = join(root, DEEP_NAME, "mnt");
    mkdirSync(mountPoint, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "burrow-test", mountPoint]);
    mounted.push(mountPoint);
    writeFileSync(join(mountPoint, "precious"), "x");

    const error = await rejection(removeTree(root));

    expect(error).toMatchObject({ code: Code.FailedPrecondition, reason: "mounted_inside" });
    expect(error.details?.["path"]).toBe(root);
    expect(error.message).toContain(mountPoint);
    expect(readFileSync(join(mountPoint, "precious"), "utf8")).toBe("x");
  });

  it("refuses relative paths and /, and reports cancellation", async () => {
    expect((await rejection(removeTree("relative/dir"))).code).toBe(Code.InvalidArgument);
    expect((await rejection(removeTree("/"))).code).toBe(Code.InvalidArgument);
    const root = join(work, "tree");
    mkdirSync(root);
    const error = await rejection(removeTree(root, { signal: AbortSignal.abort() }));
    expect(error.code).toBe(Code.Canceled);
    expect(existsSync(root)).toBe(true);
  });

  describe.skipIf(!BTRFS_TOOLS)("on btrfs", () => {
    let data: string;

    beforeEach(() => {
      const image = join(work, "disk.img");
      data = join(work, "data");
      mkdirSync(data);
      execFileSync("truncate", ["-s", "256M", image]);
      execFileSync("/usr/sbin/mkfs.btrfs", ["-q", image], { stdio: "ignore" });
      execFileSync("mount", ["-o", "loop", image, data]);
      mounted.push(data);
      execFileSync("/usr/bin/btrfs", ["quota", "enable", data]);
    });

    it("deletes a quota-limited subvolume holding a tree deeper than PATH_MAX, and its qgroup with it", async () => {
      const outside = join(work, "outside.txt");
      writeFileSync(outside, "keep me");
      const subvolume = join(data, "sandbox");
      execFileSync("/usr/bin/btrfs", ["subvolume", "create", subvolume], { stdio: "ignore" });
      execFileSync("/usr/bin/btrfs", ["qgroup", "limit", "64M", subvolume]);
      const id = execFileSync("/usr/bin/btrfs", ["inspect-internal", "rootid", subvolume], { encoding: "utf8" }).trim();
      plantHostileTree(join(subvolume, "upper"), outside);

      await removeTree(subvolume);

      expect(existsSync(subvolume)).toBe(false);
      expect(readFileSync(outside, "utf8")).toBe("keep me");
      // The subvolume is dropped in the background; once it is, no qgroup of it remains (removed by the kernel,
      // or by `qgroup clear-stale` on kernels that keep it).
      execFileSync("/usr/bin/btrfs", ["filesystem", "sync", data]);
      execFileSync("/usr/bin/btrfs", ["subvolume", "sync", data]);
      execFileSync("/usr/bin/btrfs", ["qgroup", "clear-stale", data], { stdio: "ignore" });
      const qgroups = execFileSync("/usr/bin/btrfs", ["qgroup", "show", data], { encoding: "utf8" });
      expect(qgroups).not.toMatch(new RegExp(`^0/${id}\\s`, "m"));
    });

    it("deletes subvolumes removed at the same time, also when btrfs refuses one of them", async () => {
      const subvolumes = Array.from({ length: 6 }, (_, i) => join(data, `sandbox-${i}`));
      for (const subvolume of subvolumes) {
        execFileSync("/usr/bin/btrfs", ["subvolume", "create", subvolume], { stdio: "ignore" });
        writeFileSync(join(subvolume, "file"), "x");
      }
      // btrfs refuses to delete a subvolume holding another one: the shared delete fails, each path is tried alone,
      // and that one goes file by file.
      execFileSync("/usr/bin/btrfs", ["subvolume", "create", join(subvolumes[2] as string, "nested")], { stdio: "ignore" });

      const results = await Promise.allSettled(subvolumes.map((subvolume) => removeTree(subvolume)));

      expect(results.map((r) => r.status)).toEqual(subvolumes.map(() => "fulfilled"));
      for (const subvolume of subvolumes) expect(existsSync(subvolume)).toBe(false);
      const left = execFileSync("/usr/bin/btrfs", ["subvolume", "list", data], { encoding: "utf8" });
      expect(left).not.toMatch(/sandbox-/);
    });

    it("removes a deep plain directory inside a subvolume file by file", async () => {
      const subvolume = join(data, "sandbox");
      execFileSync("/usr/bin/btrfs", ["subvolume", "create", subvolume], { stdio: "ignore" });
      const upper = join(subvolume, "upper");
      buildDeepTreeOnHost(upper);

      await removeTree(upper);

      expect(existsSync(upper)).toBe(false);
      expect(existsSync(subvolume)).toBe(true);
    });
  });
});
