// Volumes end to end with the official SDK's `Volume` and `Sandbox` against the global server: create, list, mount
// in two sandboxes at once (a write in one is read in the other, by `user` and root), the content API without any
// sandbox (list with depth, mkdir, stat, metadata, read, write, remove), symlink escapes resolved inside the volume,
// delete refused while mounted and accepted after kill, bad mount paths (400 naming the path), an unknown volume
// (404, nothing left behind), memory and filesystem pause keeping the mount, and a snapshot that does not copy it.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Volume, VolumeFileType, VolumePathNotFoundError } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { leftoverCgroups } from "../helpers/sandbox-internals.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl, debug: false };
const started: string[] = [];
const volumes: string[] = [];

async function create(mounts?: Record<string, Volume | string>): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 300_000, ...(mounts ? { volumeMounts: mounts } : {}) });
  started.push(sandbox.sandboxId);
  return sandbox;
}

async function newVolume(label: string): Promise<Volume> {
  const volume = await Volume.create(`${label}-${Date.now().toString(36)}`, opts);
  volumes.push(volume.volumeId);
  return volume;
}

async function sh(sandbox: Sandbox, cmd: string, user: "root" | "user" = "user") {
  return sandbox.commands.run(cmd, { user, timeoutMs: 60_000 }).catch((error: unknown) => error as { exitCode: number; stdout: string; stderr: string });
}

async function createError(mounts: Record<string, string>): Promise<Error> {
  const error = await Sandbox.create("base", { ...opts, volumeMounts: mounts }).then(
    (sandbox) => {
      started.push(sandbox.sandboxId);
      return new Error("the create succeeded");
    },
    (err: unknown) => err as Error,
  );
  return error;
}

beforeAll(() => {
  // The SDK sends content requests to E2B_VOLUME_API_URL (E2B runs them on a host of their own); Burrow serves
  // them on its API port.
  process.env["E2B_VOLUME_API_URL"] = env.apiUrl;
});

afterAll(async () => {
  await Promise.allSettled(started.map((id) => Sandbox.kill(id, opts)));
  await Promise.allSettled(volumes.map((id) => Volume.destroy(id, opts)));
});

describe("volumes", () => {
  it("creates, lists, gets and connects to a volume; names are unique", async () => {
    const volume = await newVolume("meta");
    expect(volume.volumeId).toMatch(/^[a-z0-9]+$/);
    expect(volume.token).toMatch(/^vol_/);
    const listed = await Volume.list(opts);
    expect(listed).toContainEqual({ volumeId: volume.volumeId, name: volume.name });
    const info = await Volume.getInfo(volume.volumeId, opts);
    expect(info).toMatchObject({ volumeId: volume.volumeId, name: volume.name, token: volume.token });
    const connected = await Volume.connect(volume.volumeId, opts);
    expect(connected.token).toBe(volume.token);
    await expect(Volume.create(volume.name, opts)).rejects.toThrow(/exists already/);
    await expect(Volume.create("../bad name", opts)).rejects.toThrow(/not valid/);
    await expect(Volume.getInfo("nope0000", opts)).rejects.toThrow(/not found/);
    expect(await Volume.destroy("nope0000", opts)).toBe(false);
  });

  it("mounts one volume in two sandboxes at once; a write in one is read in the other and by the content API", async () => {
    const volume = await newVolume("shared");
    const [a, b] = await Promise.all([create({ "/mnt/shared": volume }), create({ "/home/user/data": volume.name })]);
    expect((await a.getInfo()).volumeMounts).toEqual([{ name: volume.name, path: "/mnt/shared" }]);
    expect((await b.getInfo()).volumeMounts).toEqual([{ name: volume.name, path: "/home/user/data" }]);

    // `user` writes in A, root writes in B; each reads the other's file.
    expect((await sh(a, "echo from-a > /mnt/shared/a.txt && stat -c '%U %u' /mnt/shared/a.txt")).stdout.trim()).toBe("user 1000");
    expect((await sh(b, "echo from-b > /home/user/data/b.txt && stat -c '%U' /home/user/data/b.txt", "root")).stdout.trim()).toBe("root");
    expect((await sh(b, "cat /home/user/data/a.txt")).stdout).toBe("from-a\n");
    expect((await sh(a, "cat /mnt/shared/b.txt")).stdout).toBe("from-b\n");
    // user may change root's file only if root let it; root may change user's.
    expect((await sh(a, "echo x >> /mnt/shared/b.txt")).exitCode).not.toBe(0);
    expect((await sh(b, "echo more >> /home/user/data/a.txt", "root")).exitCode).toBe(0);
    // The mount is nosuid and nodev, and mounted read-write.
    expect((await sh(a, "grep ' /mnt/shared ' /proc/self/mountinfo")).stdout).toMatch(/ rw,nosuid,nodev/);

    // The content API sees both files (owners in the sandbox's ids) and its writes show up in both sandboxes.
    expect(await volume.readFile("/a.txt")).toBe("from-a\nmore\n");
    expect(await volume.getInfo("/b.txt")).toMatchObject({ name: "b.txt", path: "/b.txt", type: VolumeFileType.FILE, uid: 0, gid: 0, size: 7 });
    await volume.writeFile("/from-api.txt", "written by the API\n");
    expect((await sh(a, "cat /mnt/shared/from-api.txt && stat -c '%u:%g' /mnt/shared/from-api.txt")).stdout).toBe("written by the API\n1000:1000\n");
    expect((await sh(b, "cat /home/user/data/from-api.txt")).stdout).toBe("written by the API\n");

    // Delete is refused while mounted, by a running or a paused sandbox.
    await expect(Volume.destroy(volume.volumeId, opts)).rejects.toThrow(/mounted by sandbox/);
    await a.kill();
    await b.pause();
    await expect(Volume.destroy(volume.volumeId, opts)).rejects.toThrow(new RegExp(`mounted by sandbox ${b.sandboxId}`));
    await b.kill();
    expect(await Volume.destroy(volume.volumeId, opts)).toBe(true);
    expect(await Volume.destroy(volume.volumeId, opts)).toBe(false);
    expect(readdirSync(join(env.stateDir, "volumes"))).not.toContain(volume.volumeId);
  });

  it("serves the content API without a sandbox: mkdir, list with depth, stat, metadata, read, write, remove", async () => {
    const volume = await newVolume("content");
    const dir = await volume.makeDir("/a/b/c", { force: true, mode: 0o750 });
    expect(dir).toMatchObject({ path: "/a/b/c", type: VolumeFileType.DIRECTORY, mode: 0o750, uid: 1000, gid: 1000 });
    await expect(volume.makeDir("/x/y")).rejects.toBeInstanceOf(VolumePathNotFoundError);
    await expect(volume.makeDir("/a")).rejects.toThrow(/exists already/);
    const rootOwned = await volume.makeDir("/owned", { uid: 0, gid: 0 });
    expect(rootOwned).toMatchObject({ uid: 0, gid: 0 });

    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
    const written = await volume.writeFile("/a/b/c/big.bin", big.buffer, { mode: 0o600 });
    expect(written).toMatchObject({ size: big.length, mode: 0o600, type: VolumeFileType.FILE });
    expect(Buffer.from(await volume.readFile("/a/b/c/big.bin", { format: "bytes" })).equals(Buffer.from(big))).toBe(true);
    // A stream in, a stream out.
    const chunks = ["one ", "two ", "three"];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        controller.close();
      },
    });
    await volume.writeFile("/streamed.txt", stream);
    const reader = (await volume.readFile("/streamed.txt", { format: "stream" })).getReader();
    let text = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text).toBe("one two three");
    await volume.writeFile("/empty.txt", "");
    expect(await volume.readFile("/empty.txt")).toBe("");
    // Writing into a directory that does not exist makes it.
    await volume.writeFile("/new/dir/file.txt", "deep");
    expect(await volume.readFile("/new/dir/file.txt")).toBe("deep");

    const top = await volume.list("/");
    expect(top.map((e) => e.name)).toEqual(["a", "empty.txt", "new", "owned", "streamed.txt"]);
    const deep = await volume.list("/a", { depth: 3 });
    expect(deep.map((e) => e.path)).toEqual(["/a/b", "/a/b/c", "/a/b/c/big.bin"]);
    expect((await volume.list("/a")).map((e) => e.path)).toEqual(["/a/b"]);

    const updated = await volume.updateMetadata("/streamed.txt", { uid: 0, gid: 0, mode: 0o640 });
    expect(updated).toMatchObject({ uid: 0, gid: 0, mode: 0o640 });
    expect(await volume.exists("/streamed.txt")).toBe(true);
    await volume.remove("/streamed.txt");
    expect(await volume.exists("/streamed.txt")).toBe(false);
    await volume.remove("/a");
    expect(await volume.exists("/a/b/c/big.bin")).toBe(false);
    await expect(volume.remove("/a")).rejects.toBeInstanceOf(VolumePathNotFoundError);
    await expect(volume.readFile("/missing")).rejects.toBeInstanceOf(VolumePathNotFoundError);
    await expect(volume.readFile("/new")).rejects.toThrow(/directory/);

    // The token is the credential: a wrong one and another volume's are refused.
    const other = await newVolume("other");
    await expect(new Volume(volume.volumeId, volume.name, other.token).list("/")).rejects.toThrow(/invalid volume token/);
    const raw = await fetch(`${env.apiUrl}/volumecontent/${volume.volumeId}/dir?path=/`);
    expect(raw.status).toBe(401);
    expect(await raw.json()).toMatchObject({ code: 401 });
  });

  it("resolves symlinks inside the volume: a link to a host path or with .. never leaves it", async () => {
    const volume = await newVolume("links");
    const sandbox = await create({ "/mnt/v": volume });
    const made = await sh(
      sandbox,
      "cd /mnt/v && ln -s /etc/hostname abs && ln -s ../../../../../etc/hostname rel && ln -s / root && ln -s loop loop && mkdir d && ln -s /etc d/etc",
    );
    expect(made.exitCode).toBe(0);
    // Resolved as if the volume were "/": nothing there yet.
    await expect(volume.readFile("/abs")).rejects.toBeInstanceOf(VolumePathNotFoundError);
    await expect(volume.readFile("/rel")).rejects.toBeInstanceOf(VolumePathNotFoundError);
    await expect(volume.readFile("/d/etc/hostname")).rejects.toBeInstanceOf(VolumePathNotFoundError);
    // What the links name inside the volume is what they reach.
    await volume.writeFile("/etc/hostname", "volume's own\n");
    expect(await volume.readFile("/abs")).toBe("volume's own\n");
    expect(await volume.readFile("/rel")).toBe("volume's own\n");
    expect(await volume.readFile("/d/etc/hostname")).toBe("volume's own\n");
    expect((await volume.list("/root")).map((e) => e.name).sort()).toEqual(["abs", "d", "etc", "loop", "rel", "root"]);
    // A write through a link lands in the volume, never on the host.
    const hostHostname = readFileSync("/etc/hostname", "utf8");
    await volume.writeFile("/root/etc/hostname", "changed\n");
    expect(readFileSync("/etc/hostname", "utf8")).toBe(hostHostname);
    expect((await sh(sandbox, "cat /mnt/v/etc/hostname")).stdout).toBe("changed\n");
    // Links are reported as links, and removing one removes the link only.
    expect(await volume.getInfo("/abs")).toMatchObject({ type: VolumeFileType.SYMLINK, target: "/etc/hostname" });
    await volume.remove("/root");
    expect(await volume.exists("/etc/hostname")).toBe(true);
    await expect(volume.readFile("/loop")).rejects.toThrow(/too many symlinks/);
    // ".." in the request path itself is refused.
    await expect(volume.readFile("/../etc/passwd")).rejects.toThrow(/leaves the volume/);
    await expect(volume.list("../")).rejects.toThrow(/leaves the volume/);
  });

  it("refuses bad mount paths with 400 naming the path, and leaves nothing behind", async () => {
    const volume = await newVolume("paths");
    const before = (await Sandbox.list(opts).nextItems()).length;
    for (const path of ["/proc", "/proc/x", "/sys", "/dev/shm", "/.burrow", "/.burrow/bin", "relative/path", "/a/../b", "/", "/a//b"]) {
      const error = await createError({ [path]: volume.name });
      expect(error.message, path).toContain(JSON.stringify(path));
      expect(error.message, path).toMatch(/400/);
    }
    const duplicate = await fetch(`${env.apiUrl}/v2/sandboxes`, {
      method: "POST",
      headers: { "x-api-key": env.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ templateID: "base", volumeMounts: [{ name: volume.name, path: "/mnt/x" }, { name: volume.name, path: "/mnt/x/" }] }),
    });
    expect(duplicate.status).toBe(400);
    expect(await duplicate.json()).toMatchObject({ code: 400, message: expect.stringContaining("used twice") });
    const nested = await fetch(`${env.apiUrl}/v2/sandboxes`, {
      method: "POST",
      headers: { "x-api-key": env.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ templateID: "base", volumeMounts: [{ name: volume.name, path: "/mnt/x" }, { name: volume.name, path: "/mnt/x/y" }] }),
    });
    expect(nested.status).toBe(400);
    expect((await Sandbox.list(opts).nextItems()).length).toBe(before);
  });

  it("fails a create naming an unknown volume with 404 and leaves no sandbox, directory or cgroup", async () => {
    const sandboxDirs = () => new Set(readdirSync(join(env.stateDir, "sandboxes")));
    const before = sandboxDirs();
    const listed = (await Sandbox.list(opts).nextItems()).length;
    const error = await createError({ "/mnt/data": "no-such-volume" });
    expect(error.message).toMatch(/404/);
    expect(error.message).toContain("volume 'no-such-volume' not found");
    expect((await Sandbox.list(opts).nextItems()).length).toBe(listed);
    // Only pool refills (of other suites' creates on this server) may have appeared meanwhile; a refill's directory
    // exists a moment before its record.
    for (const id of sandboxDirs()) {
      if (before.has(id)) continue;
      const dir = join(env.stateDir, "sandboxes", id);
      for (let i = 0; i < 100 && existsSync(dir) && !existsSync(join(dir, "sandbox.json")); i++) await new Promise((r) => setTimeout(r, 100));
      if (!existsSync(dir)) continue; // a refill that failed and was cleaned up
      const record = JSON.parse(readFileSync(join(dir, "sandbox.json"), "utf8")) as { pooled: boolean };
      expect(record.pooled, id).toBe(true);
      expect(leftoverCgroups(env.instance, id).length).toBeGreaterThan(0);
    }
  });

  it("keeps the mount through a memory pause and a filesystem pause", async () => {
    const volume = await newVolume("pause");
    const sandbox = await create({ "/data": volume });
    await sh(sandbox, "echo before > /data/before.txt");

    expect(await sandbox.pause()).toBe(true);
    await volume.writeFile("/while-paused.txt", "paused\n");
    const resumed = await Sandbox.connect(sandbox.sandboxId, opts);
    expect((await sh(resumed, "cat /data/before.txt /data/while-paused.txt")).stdout).toBe("before\npaused\n");

    // A filesystem pause ends every process; the cold boot binds the volume again.
    expect(await Sandbox.pause(sandbox.sandboxId, { ...opts, keepMemory: false })).toBe(true);
    const booted = await Sandbox.connect(sandbox.sandboxId, opts);
    expect((await sh(booted, "cat /data/before.txt /data/while-paused.txt && echo after > /data/after.txt")).stdout).toBe("before\npaused\n");
    expect((await sh(booted, "grep -c ' /data ' /proc/self/mountinfo")).stdout.trim()).toBe("1");
    expect(await volume.readFile("/after.txt")).toBe("after\n");
    expect((await booted.getInfo()).volumeMounts).toEqual([{ name: volume.name, path: "/data" }]);
  });

  it("does not copy a volume's files into a snapshot of a sandbox that mounts it", async () => {
    const volume = await newVolume("snap");
    const sandbox = await create({ "/data": volume });
    await sh(sandbox, "echo in-volume > /data/v.txt && echo in-layer > /home/user/l.txt");
    const snapshot = await sandbox.createSnapshot();
    const fromSnapshot = await Sandbox.create(snapshot.snapshotId, { ...opts, timeoutMs: 120_000 });
    started.push(fromSnapshot.sandboxId);
    expect((await sh(fromSnapshot, "cat /home/user/l.txt")).stdout).toBe("in-layer\n");
    // The mount point is an empty directory of the writable layer; the volume's file is not there.
    expect((await sh(fromSnapshot, "ls -A /data | wc -l")).stdout.trim()).toBe("0");
    expect((await fromSnapshot.getInfo()).volumeMounts).toEqual([]);
    expect(await volume.readFile("/v.txt")).toBe("in-volume\n");
  });
});
