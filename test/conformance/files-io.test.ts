// File content over envd's /files (SDK tests sandbox/files/{read,write,contentEncoding,metadata}): every read
// format, every upload encoding, metadata as xattrs, each checked from inside the sandbox with its own tools.
import { describe, expect } from "vitest";
import { InvalidArgumentError, NotFoundError } from "e2b";
import { sandboxTest } from "./env.js";

const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);

function streamOf(...chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

describe("files: read", () => {
  sandboxTest("bytes are exact in every format (all 256 byte values)", async ({ sandbox }) => {
    await sandbox.commands.run("python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))' > bin");
    expect(await sandbox.files.read("bin", { format: "bytes" })).toEqual(allBytes);
    expect(new Uint8Array(await (await sandbox.files.read("bin", { format: "blob" })).arrayBuffer())).toEqual(allBytes);
    const stream = await sandbox.files.read("bin", { format: "stream" });
    expect(new Uint8Array(await new Response(stream).arrayBuffer())).toEqual(allBytes);
    expect(new Uint8Array(await new Response(await sandbox.files.read("bin", { format: "stream", gzip: true })).arrayBuffer())).toEqual(allBytes);
  });

  sandboxTest("text is UTF-8 decoded", async ({ sandbox }) => {
    await sandbox.commands.run("printf 'h\\xc3\\xa9llo \\xe2\\x9c\\x93' > utf8.txt");
    expect(await sandbox.files.read("utf8.txt")).toBe("héllo ✓");
  });

  sandboxTest("empty files in every format", async ({ sandbox }) => {
    await sandbox.commands.run(": > empty");
    expect(await sandbox.files.read("empty")).toBe("");
    expect((await sandbox.files.read("empty", { format: "bytes" })).length).toBe(0);
    expect((await sandbox.files.read("empty", { format: "blob" })).size).toBe(0);
    expect((await new Response(await sandbox.files.read("empty", { format: "stream" })).arrayBuffer()).byteLength).toBe(0);
  });

  sandboxTest("a missing file is NotFoundError, a directory is InvalidArgumentError", async ({ sandbox }) => {
    await expect(sandbox.files.read("missing.txt")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.files.read("/home/user")).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  sandboxTest("root's files are readable as root", async ({ sandbox }) => {
    await sandbox.commands.run("echo -n s > /root/secret && chmod 600 /root/secret", { user: "root" });
    expect(await sandbox.files.read("/root/secret", { user: "root" })).toBe("s");
  });
});

describe("files: write", () => {
  sandboxTest("single write: returned info, owner, parents created", async ({ sandbox }) => {
    const info = await sandbox.files.write("new/dir/file.txt", "content");
    expect(info).toMatchObject({ name: "file.txt", path: "/home/user/new/dir/file.txt" });
    expect((await sandbox.commands.run("cat new/dir/file.txt; stat -c ' %U' new new/dir new/dir/file.txt")).stdout).toBe(
      "content user\n user\n user\n",
    );
  });

  sandboxTest("overwrite replaces the whole content", async ({ sandbox }) => {
    await sandbox.files.write("over.txt", "a long first version");
    await sandbox.files.write("over.txt", "short");
    expect((await sandbox.commands.run("cat over.txt")).stdout).toBe("short");
  });

  sandboxTest("multi-file write in one call: one entry per file", async ({ sandbox }) => {
    const infos = await sandbox.files.write([
      { path: "multi/a.txt", data: "A" },
      { path: "/tmp/multi-b.bin", data: allBytes.buffer.slice(0) },
      { path: "multi/c.txt", data: new Blob(["C"]) },
    ]);
    expect(infos.map((i) => i.path).sort()).toEqual(["/home/user/multi/a.txt", "/home/user/multi/c.txt", "/tmp/multi-b.bin"]);
    expect((await sandbox.commands.run("cat multi/a.txt multi/c.txt")).stdout).toBe("AC");
    expect((await sandbox.commands.run("sha256sum < /tmp/multi-b.bin")).stdout.split(" ")[0]).toBe(
      (await sandbox.commands.run("python3 -c 'import sys,hashlib; print(hashlib.sha256(bytes(range(256))).hexdigest())'")).stdout.trim(),
    );
  });

  sandboxTest("octet-stream uploads: a ReadableStream, and useOctetStream", async ({ sandbox }) => {
    const enc = new TextEncoder();
    const info = await sandbox.files.write("streamed.txt", streamOf(enc.encode("part1-"), enc.encode("part2")));
    expect(info.path).toBe("/home/user/streamed.txt");
    expect((await sandbox.commands.run("cat streamed.txt")).stdout).toBe("part1-part2");
    await sandbox.files.write("octet.bin", allBytes.buffer.slice(0), { useOctetStream: true });
    expect(await sandbox.files.read("octet.bin", { format: "bytes" })).toEqual(allBytes);
  });

  sandboxTest("gzip uploads (multipart and stream) and gzip downloads", async ({ sandbox }) => {
    const text = "compress me ".repeat(1000);
    await sandbox.files.write("gz.txt", text, { gzip: true });
    expect((await sandbox.commands.run("wc -c < gz.txt")).stdout.trim()).toBe(String(text.length));
    expect(await sandbox.files.read("gz.txt", { gzip: true })).toBe(text);
    await sandbox.files.write("gz-stream.txt", streamOf(new TextEncoder().encode(text)), { gzip: true });
    expect(await sandbox.files.read("gz-stream.txt")).toBe(text);
  });

  sandboxTest("writing onto a directory fails", async ({ sandbox }) => {
    await sandbox.files.makeDir("isdir");
    await expect(sandbox.files.write("isdir", "x")).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  sandboxTest("metadata is stored as user.e2b.* xattrs and replaced on the next upload", async ({ sandbox }) => {
    const written = await sandbox.files.write("meta.txt", "m", { metadata: { Purpose: "test", owner_team: "a b/c" } });
    expect(written.metadata).toEqual({ purpose: "test", owner_team: "a b/c" });
    const attrs = await sandbox.commands.run("getfattr -d --absolute-names meta.txt");
    expect(attrs.stdout).toContain('user.e2b.purpose="test"');
    expect(attrs.stdout).toContain('user.e2b.owner_team="a b/c"');
    expect((await sandbox.files.getInfo("meta.txt")).metadata).toEqual({ purpose: "test", owner_team: "a b/c" });
    // An xattr set inside the sandbox shows up in getInfo too.
    await sandbox.commands.run("setfattr -n user.e2b.extra -v from-inside meta.txt");
    expect((await sandbox.files.getInfo("meta.txt")).metadata).toMatchObject({ extra: "from-inside" });

    await sandbox.files.write("meta.txt", "m2", { metadata: { only: "this" }, useOctetStream: true });
    expect((await sandbox.files.getInfo("meta.txt")).metadata).toEqual({ only: "this" });
    await sandbox.files.write("meta.txt", "m3");
    expect((await sandbox.commands.run("getfattr -d --absolute-names meta.txt")).stdout).not.toContain("user.e2b.");
  });
});
