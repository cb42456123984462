// File metadata over the Filesystem RPC and /files (SDK tests sandbox/files/{info,list,exists,makeDir,remove,
// rename,metadata}): EntryInfo fields as envd reports them, checked against what the sandbox's own tools see.
import { describe, expect } from "vitest";
import { FileType, InvalidArgumentError, NotFoundError, SandboxError } from "e2b";
import { sandboxTest } from "./env.js";

describe("files: getInfo", () => {
  sandboxTest("a file: name, path, type, size, mode, permissions, owner, group, mtime", async ({ sandbox }) => {
    await sandbox.files.write("info.txt", "12345");
    const info = await sandbox.files.getInfo("info.txt");
    expect(info).toMatchObject({
      name: "info.txt",
      path: "/home/user/info.txt",
      type: FileType.FILE,
      size: 5,
      mode: 0o644,
      permissions: "-rw-r--r--",
      owner: "user",
      group: "user",
    });
    const stat = (await sandbox.commands.run("stat -c '%a %U %G %s %Y' info.txt")).stdout.trim().split(" ");
    expect(stat.slice(0, 4)).toEqual(["644", "user", "user", "5"]);
    expect(Math.floor(info.modifiedTime!.getTime() / 1000)).toBe(Number(stat[4]));
  });

  sandboxTest("chmod is reflected in mode and permissions", async ({ sandbox }) => {
    await sandbox.files.write("x.sh", "#!/bin/sh\n");
    await sandbox.commands.run("chmod 750 x.sh");
    expect(await sandbox.files.getInfo("x.sh")).toMatchObject({ mode: 0o750, permissions: "-rwxr-x---" });
  });

  sandboxTest("a directory", async ({ sandbox }) => {
    await sandbox.files.makeDir("adir");
    expect(await sandbox.files.getInfo("adir")).toMatchObject({
      name: "adir",
      path: "/home/user/adir",
      type: FileType.DIR,
      mode: 0o755,
      permissions: "drwxr-xr-x",
      owner: "user",
      group: "user",
    });
  });

  sandboxTest("a file written as root is owned by root", async ({ sandbox }) => {
    await sandbox.files.write("/opt/rootfile", "r", { user: "root" });
    expect(await sandbox.files.getInfo("/opt/rootfile")).toMatchObject({ owner: "root", group: "root" });
    expect((await sandbox.commands.run("stat -c '%U:%G' /opt/rootfile")).stdout.trim()).toBe("root:root");
  });

  sandboxTest("a symlink: target's type, absolute symlinkTarget", async ({ sandbox }) => {
    await sandbox.files.write("target.txt", "t");
    await sandbox.files.makeDir("tdir");
    await sandbox.commands.run("ln -s target.txt link && ln -s /home/user/tdir dlink && ln -s missing dangling");
    const link = await sandbox.files.getInfo("link");
    expect(link).toMatchObject({ name: "link", path: "/home/user/link", type: FileType.FILE, symlinkTarget: "/home/user/target.txt" });
    expect(link.permissions.startsWith("L")).toBe(true);
    const dlink = await sandbox.files.getInfo("dlink");
    expect(dlink).toMatchObject({ type: FileType.DIR, symlinkTarget: "/home/user/tdir" });
    const plain = await sandbox.files.getInfo("target.txt");
    expect(plain.symlinkTarget).toBeUndefined();
    // Listing shows the links as well.
    const names = (await sandbox.files.list(".")).map((e) => e.name);
    expect(names).toEqual(expect.arrayContaining(["link", "dlink", "target.txt", "tdir"]));
  });

  sandboxTest("a missing path is NotFoundError; exists() is false", async ({ sandbox }) => {
    await expect(sandbox.files.getInfo("nope/nope")).rejects.toBeInstanceOf(NotFoundError);
    expect(await sandbox.files.exists("nope")).toBe(false);
    await sandbox.files.makeDir("yes");
    expect(await sandbox.files.exists("yes")).toBe(true);
    expect(await sandbox.files.exists("/etc/passwd")).toBe(true);
  });
});

describe("files: list, makeDir, remove, rename", () => {
  sandboxTest("list depth 1, 2 and 3 against find", async ({ sandbox }) => {
    await sandbox.commands.run("mkdir -p d/a/b/c && touch d/f d/a/g d/a/b/h d/a/b/c/i");
    const listed = async (depth: number) => (await sandbox.files.list("d", { depth })).map((e) => e.path).sort();
    const found = async (depth: number) =>
      (await sandbox.commands.run(`find /home/user/d -mindepth 1 -maxdepth ${depth}`)).stdout.trim().split("\n").sort();
    for (const depth of [1, 2, 3]) expect(await listed(depth)).toEqual(await found(depth));
    expect((await sandbox.files.list("d")).map((e) => [e.name, e.type]).sort()).toEqual([
      ["a", FileType.DIR],
      ["f", FileType.FILE],
    ]);
    await expect(sandbox.files.list("d", { depth: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(sandbox.files.list("no-such-dir")).rejects.toBeInstanceOf(NotFoundError);
  });

  sandboxTest("makeDir creates parents, is false when the dir exists, owned by the user", async ({ sandbox }) => {
    expect(await sandbox.files.makeDir("p/q/r")).toBe(true);
    expect(await sandbox.files.makeDir("p/q/r")).toBe(false);
    expect((await sandbox.commands.run("stat -c '%F %U' p p/q p/q/r")).stdout).toBe(
      "directory user\ndirectory user\ndirectory user\n",
    );
    expect(await sandbox.files.makeDir("/root/as-root", { user: "root" })).toBe(true);
    expect((await sandbox.commands.run("stat -c %U /root/as-root", { user: "root" })).stdout.trim()).toBe("root");
  });

  sandboxTest("remove deletes files and trees; a missing path is no error", async ({ sandbox }) => {
    await sandbox.files.write("rm/a/b.txt", "b");
    await sandbox.files.write("rm/c.txt", "c");
    await sandbox.files.remove("rm/c.txt");
    expect(await sandbox.files.exists("rm/c.txt")).toBe(false);
    expect(await sandbox.files.exists("rm/a/b.txt")).toBe(true);
    await sandbox.files.remove("rm");
    expect((await sandbox.commands.run("test -e rm && echo present || echo absent")).stdout.trim()).toBe("absent");
    await sandbox.files.remove("rm");
  });

  sandboxTest("rename moves files and directories; a missing source is NotFoundError", async ({ sandbox }) => {
    await sandbox.files.write("mv/src.txt", "payload");
    const moved = await sandbox.files.rename("mv/src.txt", "mv/dst.txt");
    expect(moved).toMatchObject({ name: "dst.txt", path: "/home/user/mv/dst.txt", type: FileType.FILE });
    expect(await sandbox.files.exists("mv/src.txt")).toBe(false);
    expect(await sandbox.files.read("mv/dst.txt")).toBe("payload");
    const dir = await sandbox.files.rename("mv", "mv2");
    expect(dir).toMatchObject({ name: "mv2", type: FileType.DIR });
    expect(await sandbox.files.read("mv2/dst.txt")).toBe("payload");
    await expect(sandbox.files.rename("mv", "mv3")).rejects.toBeInstanceOf(NotFoundError);
  });

  sandboxTest("watching a file, not a directory, is refused", async ({ sandbox }) => {
    await sandbox.files.write("plain.txt", "x");
    await expect(sandbox.files.watchDir("plain.txt", () => undefined)).rejects.toBeInstanceOf(SandboxError);
  });
});
