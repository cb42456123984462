// Files over envd's /files and Filesystem RPC (SDK tests sandbox/files/*).
import { describe, expect } from "vitest";
import { FileType, NotFoundError } from "e2b";
import { sandboxTest } from "./env.js";

describe("files", () => {
  sandboxTest("write and read text, bytes, blob and stream", async ({ sandbox }) => {
    const info = await sandbox.files.write("notes/a.txt", "hello");
    expect(info.path).toBe("/home/user/notes/a.txt");
    expect(await sandbox.files.read("notes/a.txt")).toBe("hello");
    expect(new TextDecoder().decode(await sandbox.files.read("/home/user/notes/a.txt", { format: "bytes" }))).toBe("hello");
    expect(await (await sandbox.files.read("notes/a.txt", { format: "blob" })).text()).toBe("hello");
    const stream = await sandbox.files.read("notes/a.txt", { format: "stream" });
    expect(await new Response(stream).text()).toBe("hello");
  });

  sandboxTest("empty files and large files", async ({ sandbox }) => {
    await sandbox.files.write("empty", "");
    expect(await sandbox.files.read("empty")).toBe("");
    const big = "x".repeat(8 * 1024 * 1024);
    await sandbox.files.write("big", big);
    expect((await sandbox.files.read("big")).length).toBe(big.length);
  });

  sandboxTest("multi-file write, octet-stream and gzip uploads", async ({ sandbox }) => {
    const infos = await sandbox.files.write([
      { path: "m/1.txt", data: "one" },
      { path: "m/2.txt", data: "two" },
    ]);
    expect(infos.map((i) => i.name).sort()).toEqual(["1.txt", "2.txt"]);
    await sandbox.files.write("m/3.txt", "three", { useOctetStream: true });
    await sandbox.files.write("m/4.txt", "four", { gzip: true });
    expect(await sandbox.files.read("m/3.txt")).toBe("three");
    expect(await sandbox.files.read("m/4.txt", { gzip: true })).toBe("four");
  });

  sandboxTest("list with depth, exists, getInfo, makeDir, rename, remove", async ({ sandbox }) => {
    await sandbox.files.write("tree/a/b/c.txt", "c");
    expect((await sandbox.files.list("tree")).map((e) => e.name)).toEqual(["a"]);
    expect((await sandbox.files.list("tree", { depth: 3 })).map((e) => e.path)).toEqual([
      "/home/user/tree/a",
      "/home/user/tree/a/b",
      "/home/user/tree/a/b/c.txt",
    ]);
    expect(await sandbox.files.exists("tree/a/b/c.txt")).toBe(true);
    expect(await sandbox.files.exists("tree/nope")).toBe(false);
    const info = await sandbox.files.getInfo("tree/a/b/c.txt");
    expect(info).toMatchObject({ name: "c.txt", type: FileType.FILE, size: 1, owner: "user", permissions: "-rw-r--r--" });
    expect(await sandbox.files.makeDir("tree/new")).toBe(true);
    expect(await sandbox.files.makeDir("tree/new")).toBe(false);
    const moved = await sandbox.files.rename("tree/a/b/c.txt", "tree/new/c.txt");
    expect(moved.path).toBe("/home/user/tree/new/c.txt");
    await sandbox.files.remove("tree");
    expect(await sandbox.files.exists("tree")).toBe(false);
    await expect(sandbox.files.read("tree/new/c.txt")).rejects.toBeInstanceOf(NotFoundError);
  });

  sandboxTest("file metadata round-trips", async ({ sandbox }) => {
    await sandbox.files.write("meta.txt", "m", { metadata: { purpose: "test" } });
    const info = await sandbox.files.getInfo("meta.txt");
    expect((info as unknown as { metadata?: Record<string, string> }).metadata).toEqual({ purpose: "test" });
  });
});
