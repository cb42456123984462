import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { filesystemPb } from "@burrow/protocol";
import { Code } from "@connectrpc/connect";
import { FileType, FilesystemEventType, NotFoundError, type FilesystemEvent, type Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { setupEnvd, type TestUser } from "./helpers/envd-fixture.js";
import { rpcClients } from "./helpers/rpc-client.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
let sbx: Sandbox;
let user: TestUser;
let base: string; // a directory inside the user's home, fresh per file
let rpc: ReturnType<typeof rpcClients>;

beforeAll(async () => {
  env = await setupEnvd();
  sbx = env.sandbox;
  user = env.user;
  base = join(user.home, "work");
  rpc = rpcClients(env.envd.url, env.token);
});
afterAll(async () => {
  await env?.cleanup();
});

describe("files over HTTP (official SDK)", () => {
  test("write then read text; relative paths resolve against home; files belong to the user", async () => {
    const info = await sbx.files.write("work/hello.txt", "hello world");
    expect(info).toMatchObject({ name: "hello.txt", path: join(base, "hello.txt"), type: "file" });
    expect(await sbx.files.read(join(base, "hello.txt"))).toBe("hello world");
    expect(await sbx.files.read("~/work/hello.txt")).toBe("hello world");
    const st = statSync(join(base, "hello.txt"));
    expect([st.uid, st.gid]).toEqual([user.uid, user.gid]);
    expect(statSync(base).uid).toBe(user.uid); // created parent dir too
  });

  test("multi-file write is one multipart request with one entry per file", async () => {
    const infos = await sbx.files.write([
      { path: `${base}/multi/a.txt`, data: "A" },
      { path: `${base}/multi/deep/b.txt`, data: new TextEncoder().encode("B").buffer as ArrayBuffer },
    ]);
    expect(infos.map((i) => i.name)).toEqual(["a.txt", "b.txt"]);
    expect(readFileSync(`${base}/multi/deep/b.txt`, "utf8")).toBe("B");
  });

  test("octet-stream and gzip uploads; gzip and bytes downloads", async () => {
    await sbx.files.write(`${base}/octet.bin`, "octet-body", { useOctetStream: true } as never);
    expect(readFileSync(`${base}/octet.bin`, "utf8")).toBe("octet-body");
    const big = "z".repeat(100_000);
    await sbx.files.write(`${base}/gz.txt`, big, { gzip: true } as never);
    expect(readFileSync(`${base}/gz.txt`, "utf8")).toBe(big);
    expect(await sbx.files.read(`${base}/gz.txt`, { gzip: true } as never)).toBe(big);
    const bytes = await sbx.files.read(`${base}/octet.bin`, { format: "bytes" });
    expect(Buffer.from(bytes).toString()).toBe("octet-body");
    writeFileSync(`${base}/empty.txt`, "");
    expect(await sbx.files.read(`${base}/empty.txt`)).toBe("");
  });

  test("metadata headers become user.e2b.* xattrs and are replaced on rewrite", async () => {
    const info = await sbx.files.write(`${base}/meta.txt`, "m", { metadata: { Owner: "alice", purpose: "test" } } as never);
    expect((info as { metadata?: Record<string, string> }).metadata).toEqual({ owner: "alice", purpose: "test" });
    const xattrs = execFileSync("getfattr", ["--absolute-names", "-d", "-m", "^user\\.e2b\\.", `${base}/meta.txt`], { encoding: "utf8" });
    expect(xattrs).toContain('user.e2b.owner="alice"');
    expect((await sbx.files.getInfo(`${base}/meta.txt`)).metadata).toEqual({ owner: "alice", purpose: "test" });
    await sbx.files.write(`${base}/meta.txt`, "m2");
    expect((await sbx.files.getInfo(`${base}/meta.txt`)).metadata ?? {}).toEqual({});
  });

  test("read of a missing file is FileNotFoundError; a directory is refused", async () => {
    await expect(sbx.files.read(`${base}/nope.txt`)).rejects.toBeInstanceOf(NotFoundError);
    await expect(sbx.files.read(base)).rejects.toThrow(/is a directory/);
  });
});

describe("filesystem RPCs (official SDK)", () => {
  test("stat: mode, permissions, owner, symlink", async () => {
    mkdirSync(`${base}/st`, { recursive: true });
    writeFileSync(`${base}/st/f.txt`, "12345", { mode: 0o644 });
    execFileSync("chmod", ["644", `${base}/st/f.txt`]);
    execFileSync("chown", [`${user.name}:${user.name}`, `${base}/st/f.txt`]);
    symlinkSync(`${base}/st/f.txt`, `${base}/st/link`);
    const f = await sbx.files.getInfo(`${base}/st/f.txt`);
    expect(f).toMatchObject({ name: "f.txt", type: FileType.FILE, size: 5, mode: 0o644, permissions: "-rw-r--r--",
      owner: user.name, group: user.name, path: `${base}/st/f.txt` });
    expect(f.modifiedTime?.getTime()).toBe(Math.floor(statSync(`${base}/st/f.txt`).mtimeMs));
    const d = await sbx.files.getInfo(`${base}/st`);
    expect(d).toMatchObject({ type: FileType.DIR, mode: 0o755, permissions: "drwxr-xr-x" });
    const l = await sbx.files.getInfo(`${base}/st/link`);
    expect(l).toMatchObject({ type: FileType.FILE, mode: 0o644, permissions: "Lrwxrwxrwx", symlinkTarget: `${base}/st/f.txt` });
    expect(await sbx.files.exists(`${base}/st/missing`)).toBe(false);
    const tmp = await sbx.files.getInfo("/tmp", { user: "root" });
    expect(tmp.permissions).toBe("dtrwxrwxrwx");
  });

  test("list with depth", async () => {
    mkdirSync(`${base}/tree/a/b/c`, { recursive: true });
    writeFileSync(`${base}/tree/top.txt`, "t");
    writeFileSync(`${base}/tree/a/b/inner.txt`, "i");
    const d1 = await sbx.files.list(`${base}/tree`);
    expect(d1.map((e) => e.name).sort()).toEqual(["a", "top.txt"]);
    const d3 = await sbx.files.list(`${base}/tree`, { depth: 3 });
    expect(d3.map((e) => e.path.slice(`${base}/tree/`.length)).sort()).toEqual(["a", "a/b", "a/b/c", "a/b/inner.txt", "top.txt"]);
    await expect(sbx.files.list(`${base}/tree/nope`)).rejects.toBeInstanceOf(NotFoundError);
  });

  test("makeDir: creates (owned by the user), false when it exists, error on a file", async () => {
    expect(await sbx.files.makeDir(`${base}/made/x/y`)).toBe(true);
    expect(statSync(`${base}/made/x`).uid).toBe(user.uid);
    expect(await sbx.files.makeDir(`${base}/made/x/y`)).toBe(false);
    writeFileSync(`${base}/made/file`, "f");
    await expect(sbx.files.makeDir(`${base}/made/file`)).rejects.toThrow(/not a directory/);
  });

  test("rename and remove (RemoveAll semantics)", async () => {
    writeFileSync(`${base}/from.txt`, "r");
    const moved = await sbx.files.rename(`${base}/from.txt`, `${base}/moved/to.txt`);
    expect(moved).toMatchObject({ name: "to.txt", path: `${base}/moved/to.txt`, type: FileType.FILE });
    expect(existsSync(`${base}/from.txt`)).toBe(false);
    await expect(sbx.files.rename(`${base}/from.txt`, `${base}/x`)).rejects.toBeInstanceOf(NotFoundError);
    await sbx.files.remove(`${base}/moved`);
    expect(existsSync(`${base}/moved`)).toBe(false);
    await sbx.files.remove(`${base}/moved`); // missing is not an error
  });

  test("watchDir: recursive, includeEntry, names relative to the watched dir", async () => {
    const dir = `${base}/watched`;
    mkdirSync(`${dir}/sub`, { recursive: true });
    const events: FilesystemEvent[] = [];
    const handle = await sbx.files.watchDir(dir, (e) => void events.push(e), { recursive: true, includeEntry: true } as never);
    try {
      const wait = async (pred: (e: FilesystemEvent) => boolean) => {
        while (!events.some(pred)) await new Promise((r) => setTimeout(r, 20));
      };
      await sbx.files.write(`${dir}/sub/new.txt`, "data");
      await wait((e) => e.name === "sub/new.txt" && e.type === FilesystemEventType.WRITE);
      const created = events.find((e) => e.name === "sub/new.txt" && e.type === FilesystemEventType.CREATE);
      expect(created).toBeDefined();
      expect((created as { entry?: { path: string } }).entry?.path).toBe(`${dir}/sub/new.txt`);
      mkdirSync(`${dir}/later`);
      await wait((e) => e.name === "later" && e.type === FilesystemEventType.CREATE);
      writeFileSync(`${dir}/later/deep.txt`, "x"); // directory created after the watch started
      await wait((e) => e.name === "later/deep.txt" && e.type === FilesystemEventType.CREATE);
      await sbx.files.rename(`${dir}/sub/new.txt`, `${dir}/renamed.txt`);
      await wait((e) => e.name === "sub/new.txt" && e.type === FilesystemEventType.RENAME);
      await wait((e) => e.name === "renamed.txt" && e.type === FilesystemEventType.CREATE);
      execFileSync("chmod", ["600", `${dir}/renamed.txt`]);
      await wait((e) => e.name === "renamed.txt" && e.type === FilesystemEventType.CHMOD);
      await sbx.files.remove(`${dir}/renamed.txt`);
      await wait((e) => e.name === "renamed.txt" && e.type === FilesystemEventType.REMOVE);
    } finally {
      await handle.stop();
    }
    await expect(sbx.files.watchDir(`${base}/no-such-dir`, () => {})).rejects.toBeInstanceOf(NotFoundError);
  });

  test("non-recursive watch ignores nested changes", async () => {
    const dir = `${base}/flat`;
    mkdirSync(`${dir}/sub`, { recursive: true });
    const events: FilesystemEvent[] = [];
    const handle = await sbx.files.watchDir(dir, (e) => void events.push(e));
    try {
      writeFileSync(`${dir}/sub/hidden.txt`, "x");
      writeFileSync(`${dir}/visible.txt`, "x");
      while (!events.some((e) => e.name === "visible.txt")) await new Promise((r) => setTimeout(r, 20));
      expect(events.some((e) => e.name.includes("hidden"))).toBe(false);
    } finally {
      await handle.stop();
    }
  });
});

describe("filesystem RPCs (Connect client)", () => {
  test("polling watcher: create, get events, remove", async () => {
    const dir = `${base}/polled`;
    mkdirSync(dir, { recursive: true });
    const { watcherId } = await rpc.filesystem.createWatcher({ path: dir, includeEntry: true });
    writeFileSync(`${dir}/p.txt`, "p");
    let events: filesystemPb.FilesystemEvent[] = [];
    while (!events.some((e) => e.name === "p.txt" && e.type === filesystemPb.EventType.CREATE)) {
      events = events.concat((await rpc.filesystem.getWatcherEvents({ watcherId })).events);
    }
    expect(events.find((e) => e.type === filesystemPb.EventType.CREATE)?.entry?.size).toBeDefined();
    await rpc.filesystem.removeWatcher({ watcherId });
    await expect(rpc.filesystem.getWatcherEvents({ watcherId })).rejects.toMatchObject({ code: Code.NotFound });
  });

  test("errors: NUL in path is invalid_argument; stat of missing is not_found; list of a file is invalid_argument", async () => {
    await expect(rpc.filesystem.stat({ path: "/tmp/a\0b" })).rejects.toMatchObject({ code: Code.InvalidArgument });
    await expect(rpc.filesystem.stat({ path: "/nonexistent/x" })).rejects.toMatchObject({ code: Code.NotFound });
    writeFileSync(`${base}/plain`, "x");
    await expect(rpc.filesystem.listDir({ path: `${base}/plain`, depth: 1 })).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  test("WatchDir stream ends at Connect-Timeout-Ms with deadline_exceeded", async () => {
    const it = rpc.filesystem.watchDir({ path: base }, { timeoutMs: 500 });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const m of it) seen.push(m.event.case ?? "none");
    })().catch((e: unknown) => e);
    expect(seen[0]).toBe("start");
    expect(err).toMatchObject({ code: Code.DeadlineExceeded });
  });

  test("gzip body through raw fetch: Content-Encoding gzip request", async () => {
    const res = await fetch(`${env.envd.url}/files?path=${encodeURIComponent(`${base}/raw.gz.txt`)}`, {
      method: "POST",
      headers: { "X-Access-Token": env.token, "Content-Type": "application/octet-stream", "Content-Encoding": "gzip" },
      body: gzipSync(Buffer.from("compressed!")),
    });
    expect(res.status).toBe(200);
    expect(readFileSync(`${base}/raw.gz.txt`, "utf8")).toBe("compressed!");
    expect(lstatSync(`${base}/raw.gz.txt`).uid).toBe(user.uid);
  });
});
